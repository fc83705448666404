package agents

import (
	"slices"
	"testing"
)

// Every CLI's key env is in KeyEnvs, once.
func TestKeyEnvs(t *testing.T) {
	keys := KeyEnvs()
	for _, c := range CLIs {
		for _, k := range c.Endpoint.Keys {
			if !slices.Contains(keys, k) {
				t.Errorf("%s: key env %s missing from KeyEnvs %v", c.Format, k, keys)
			}
		}
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k] {
			t.Errorf("%s twice in KeyEnvs", k)
		}
		seen[k] = true
	}
}
