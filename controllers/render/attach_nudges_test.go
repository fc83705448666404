package render

import (
	"maps"
	"testing"
)

// TestNudgeParams: the ConfigMap's nudges keys follow the namespace's
// guards as addNudges reads them.
func TestNudgeParams(t *testing.T) {
	tests := []struct {
		guards string
		want   map[string]string
	}{
		{`{}`, map[string]string{}},
		{`{"nudgeDelivery":"off"}`, map[string]string{}},
		{`{"nudgeDelivery":"file"}`, map[string]string{ParamNudgeDelivery: "file", ParamRefuseWait: "2s"}},
		{`{"nudgeDelivery":"file","refuseWait":"5s"}`, map[string]string{ParamNudgeDelivery: "file", ParamRefuseWait: "5s"}},
		{`{"nudgeDelivery":"file","refuse":false}`, map[string]string{ParamNudgeDelivery: "file"}},
		{`not json`, map[string]string{}},
	}
	for _, tt := range tests {
		d := map[string]string{}
		nudgeParams([]byte(tt.guards), d)
		if !maps.Equal(d, tt.want) {
			t.Errorf("%s: %v, want %v", tt.guards, d, tt.want)
		}
	}
}
