package charts_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

// guardProbes are values of each kind, good and bad, to ask the schema and
// the validator about.
var guardProbes = map[monitor.GuardKind][]any{
	monitor.GuardCount:    {-1, 0, 1, 2, 1.5, "3"},
	monitor.GuardDuration: {"-1s", "0s", "1500ms", "90s", "10m", "ten minutes", 5},
	monitor.GuardBool:     {true, "yes"},
	monitor.GuardChoice:   {"none", "file", "socket"},
	monitor.GuardCost:     {"5.00", 5, "five", "-1"},
	monitor.GuardTools:    {[]string{"run_tests"}, "run_tests"},
}

// schemaGaps are the values the schema lets through and the validator
// refuses: JSON Schema cannot compare durations, so the manager refuses
// these at start, naming the guard (controllers' validateConfig).
var schemaGaps = map[string]bool{`refuseWait="90s"`: true}

// TestSchemaAgreesWithGuardValidator: for every guard of the detector
// table and values of its kind, the chart's schema (helm template) and the
// one guard validator (monitor.ParseGuards, which the manager's config and
// every sidecar use) say the same: a value the schema takes is one the
// validator takes once the chart renders it, and one the schema refuses is
// one the validator refuses.
func TestSchemaAgreesWithGuardValidator(t *testing.T) {
	for _, gd := range monitor.AllGuards() {
		for _, v := range guardProbes[gd.Kind] {
			raw, _ := json.Marshal(v)
			probe := fmt.Sprintf("%s=%s", gd.Name, raw)
			t.Run(probe, func(t *testing.T) {
				out, renderErr := helm("template", release, chartDir, "--namespace", namespace, "--kube-version", kubeVersion,
					"--show-only", "templates/configmap.yaml", "--set-json", "guards."+probe)
				_, rawErr := monitor.ParseGuards([]byte(fmt.Sprintf("{%q:%s}", gd.Name, raw)))
				switch {
				case renderErr != nil && rawErr == nil:
					t.Errorf("the schema refuses what the validator takes: %v", firstLine(renderErr))
				case renderErr != nil:
					return // both refuse
				}
				_, err := monitor.ParseGuards(toJSON(t, clusterConfig(t, parseDocs(t, out))["guards"]))
				if err != nil && !schemaGaps[probe] {
					t.Errorf("the schema takes what the validator refuses: %v", err)
				}
				if err == nil && schemaGaps[probe] {
					t.Errorf("listed as a gap of the schema, but the validator takes it")
				}
			})
		}
	}
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
