package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/protocol"
	"turnwatch.dev/turnwatch/sidecar"
)

func TestParseRunConfig(t *testing.T) {
	guardsFile := filepath.Join(t.TempDir(), "guards.json")
	if err := os.WriteFile(guardsFile, []byte(`{"stepBudget":5}`), 0o644); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{ // what the controller sets (docs/protocol.md)
		protocol.EnvFormat: "pi", protocol.EnvGuards: `{"identicalCalls":3,"maxCostUSD":"5.00"}`,
		protocol.EnvPriorCostUSD: "1.25", protocol.EnvPodName: "run-a-0", protocol.EnvPodNamespace: "agents",
		protocol.EnvAgentContainer: "agent",
	}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name    string
		env     map[string]string
		args    []string
		check   func(t *testing.T, c sidecar.Options)
		wantErr string
	}{
		{name: "from the env", env: base, check: func(t *testing.T, c sidecar.Options) {
			if c.Format != "pi" || c.PodName != "run-a-0" || c.Namespace != "agents" || c.AgentContainer != "agent" ||
				c.PriorCostUSD != "1.25" || c.StreamFile != "" || c.ProgressPeriod != 15*time.Second {
				t.Fatalf("%+v", c)
			}
			if c.Guards.IdenticalCalls != 3 || c.Guards.MaxCostUSD != "5.00" || c.Guards.StepBudget != 256 {
				t.Fatalf("guards %+v: want the overrides over the defaults", c.Guards)
			}
		}},
		{name: "flags win", env: base, args: []string{"--format", "claude", "--pod", "other", "--progress-period", "2s", "--guards", guardsFile},
			check: func(t *testing.T, c sidecar.Options) {
				if c.Format != "claude" || c.PodName != "other" || c.ProgressPeriod != 2*time.Second || c.Guards.StepBudget != 5 || c.Guards.IdenticalCalls != 4 {
					t.Fatalf("%+v", c)
				}
			}},
		{name: "period in whole seconds", env: with(protocol.EnvProgressPeriod, "30", protocol.EnvStreamFile, "/stream/out.jsonl"),
			check: func(t *testing.T, c sidecar.Options) {
				if c.ProgressPeriod != 30*time.Second || c.StreamFile != "/stream/out.jsonl" {
					t.Fatalf("%+v", c)
				}
			}},
		{name: "audited detectors", env: with(protocol.EnvAudit, "identicalCalls, stall"), check: func(t *testing.T, c sidecar.Options) {
			if strings.Join(c.Audit, ",") != "identicalCalls,stall" {
				t.Fatalf("audit %q", c.Audit)
			}
		}},
		{name: "an attached Pod's guards, capped", env: with(protocol.EnvGuardsOverride, `{"identicalCalls":9,"stepBudget":1000}`, protocol.EnvGuardLimits, `{"stepBudget":300}`),
			check: func(t *testing.T, c sidecar.Options) {
				if c.Guards.IdenticalCalls != 9 || c.Guards.StepBudget != 300 || c.Guards.MaxCostUSD != "5.00" {
					t.Fatalf("guards %+v: want the annotation over the namespace's, capped", c.Guards)
				}
			}},
		{name: "an unreadable guards annotation leaves the namespace's", env: with(protocol.EnvGuardsOverride, `{"stepBudget":"many"}`),
			check: func(t *testing.T, c sidecar.Options) {
				if c.Guards.IdenticalCalls != 3 || c.Guards.StepBudget != 256 {
					t.Fatalf("guards %+v", c.Guards)
				}
			}},
		{name: "unknown audited detectors are named", env: with(protocol.EnvAudit, "stall,loops,budgets"), wantErr: `TURNWATCH_AUDIT: audit: unknown detector "loops", "budgets"`},
		{name: "missing pod identity", env: map[string]string{}, wantErr: "missing TURNWATCH_POD_NAME, TURNWATCH_POD_NAMESPACE, TURNWATCH_AGENT_CONTAINER"},
		{name: "bad guards name the field", env: with(protocol.EnvGuards, `{"stepBudget":-1}`), wantErr: "stepBudget"},
		{name: "bad format", env: with(protocol.EnvFormat, "cobol"), wantErr: `format "cobol"`},
		{name: "bad period", env: with(protocol.EnvProgressPeriod, "soon"), wantErr: `progress period "soon"`},
		{name: "bad prior cost", env: with(protocol.EnvPriorCostUSD, "lots"), wantErr: "priorCostUSD"},
		{name: "no arguments", env: base, args: []string{"extra"}, wantErr: "run takes no arguments"},
		{name: "a drill", env: with(protocol.EnvDrillScenario, "cycle", protocol.EnvModelPort, "41234"),
			check: func(t *testing.T, c sidecar.Options) {
				if c.Model != (sidecar.Model{Scenario: "cycle", Port: 41234}) {
					t.Fatalf("model %+v", c.Model)
				}
			}},
		{name: "no drill", env: base, check: func(t *testing.T, c sidecar.Options) {
			if c.Model != (sidecar.Model{}) {
				t.Fatalf("model %+v", c.Model)
			}
		}},
		{name: "drill port not a number", env: with(protocol.EnvDrillScenario, "cycle", protocol.EnvModelPort, "http"), wantErr: `TURNWATCH_MODEL_PORT "http"`},
		{name: "drill port out of range", env: with(protocol.EnvDrillScenario, "cycle", protocol.EnvModelPort, "0"), wantErr: "TURNWATCH_MODEL_PORT"},
		{name: "drill port too high", env: with(protocol.EnvDrillScenario, "cycle", protocol.EnvModelPort, "65536"), wantErr: "TURNWATCH_MODEL_PORT 65536"},
		{name: "drill scenario unknown", env: with(protocol.EnvDrillScenario, "panic", protocol.EnvModelPort, "41234"), wantErr: `TURNWATCH_DRILL_SCENARIO: unknown scenario "panic"`},
		{name: "drill port without a scenario", env: with(protocol.EnvModelPort, "41234"), wantErr: "TURNWATCH_MODEL_PORT is set without TURNWATCH_DRILL_SCENARIO"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseRunConfig(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

// `run` is wired into the sidecar's dispatcher and refuses to start without
// its Pod's identity, saying which env is missing.
func TestRunCommand(t *testing.T) {
	for _, k := range []string{protocol.EnvPodName, protocol.EnvPodNamespace, protocol.EnvAgentContainer} {
		t.Setenv(k, "")
	}
	var stderr strings.Builder
	if code := dispatch([]string{"run"}, strings.NewReader(""), io.Discard, &stderr); code != 2 {
		t.Fatalf("exit %d, want 2; stderr: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "missing TURNWATCH_POD_NAME") {
		t.Fatalf("stderr: %s", stderr.String())
	}
}
