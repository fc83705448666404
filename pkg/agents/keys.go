package agents

import "slices"

// KeyEnvs are the env vars any CLI reads its model API key from (each
// Endpoint.Keys), in table order, each once: what a template must not set
// where a policy requires the model gateway (docs/gateway.md), the
// controller's check and the admission policy's list alike.
func KeyEnvs() []string {
	var out []string
	for _, c := range CLIs {
		for _, k := range c.Endpoint.Keys {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}
