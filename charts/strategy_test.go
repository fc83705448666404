package charts_test

import (
	"fmt"
	"testing"
)

// A manager on the node's network updates by Recreate: a surge Pod would
// need the ports the old one holds and would never schedule (seen on the
// local node in the e2e's helm upgrade). Elsewhere Kubernetes' default
// stands, and an explicit strategy wins.
func TestManagerStrategy(t *testing.T) {
	tests := []struct {
		name string
		sets []string
		want string // the strategy's type; "" for none rendered
	}{
		{"default", nil, ""},
		{"hostNetwork", []string{"manager.hostNetwork=true"}, "Recreate"},
		{"explicit", []string{"manager.hostNetwork=true", "manager.strategy.type=RollingUpdate"}, "RollingUpdate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var args []string
			for _, s := range tt.sets {
				args = append(args, "--set", s)
			}
			d := find(t, render(t, args...), "Deployment", namespace, "-manager")
			spec := d["spec"].(map[string]any)
			got := ""
			if s, ok := spec["strategy"].(map[string]any); ok {
				got = fmt.Sprint(s["type"])
			}
			if got != tt.want {
				t.Errorf("strategy %q, want %q", got, tt.want)
			}
		})
	}
}
