package turnpolicy

import (
	"encoding/json"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// NamespaceGuards are what an attached Pod's sidecar takes from its
// namespace (docs/attach.md): the guards a turn there gets without a run's
// own (ResolveGuards: the defaults, then the policies, capped), as the JSON
// object a turn's sidecar reads; the strictest limit of each guard, which
// cap the Pod's own guards annotation (monitor.OverrideGuards); and the
// audited detectors.
func NamespaceGuards(defaults twv1.Guards, policies []AppliedPolicy) (guards, limits []byte, audit []string, err error) {
	settings, audited := ResolveGuards(GuardInputs{Defaults: defaults, Policies: policies})
	g, err := settingsGuards(settings)
	if err != nil {
		return nil, nil, nil, err
	}
	if guards, err = json.Marshal(g); err != nil {
		return nil, nil, nil, err
	}
	if limits, err = json.Marshal(strictestLimits(policies)); err != nil {
		return nil, nil, nil, err
	}
	for _, a := range audited {
		audit = append(audit, a.Detector)
	}
	return guards, limits, audit, nil
}

// strictestLimits is, per guard, the limit of policies that asks least:
// every policy's limits hold, so the strictest does (capToLimits).
func strictestLimits(policies []AppliedPolicy) map[string]json.RawMessage {
	kinds := guardKinds()
	out := map[string]json.RawMessage{}
	for _, p := range policies {
		for name, lim := range setFields(p.Spec.Limits) {
			if cur, ok := out[name]; !ok || monitor.OverLimit(kinds[name], cur, lim) {
				out[name] = lim
			}
		}
	}
	return out
}
