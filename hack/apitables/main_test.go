package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

// Each kind of guard gets its type and markers: the CRD's schema is a real
// schema, and Least and Most are rules.
func TestGuardField(t *testing.T) {
	for _, c := range []struct {
		gd      monitor.Guard
		typ     string
		markers []string
	}{
		{monitor.Guard{Name: "stepBudget", Kind: monitor.GuardCount}, "*int32",
			[]string{"kubebuilder:validation:Minimum=0"}},
		{monitor.Guard{Name: "cycleRepeats", Kind: monitor.GuardCount, Least: 2}, "*int32",
			[]string{"kubebuilder:validation:Minimum=0",
				`kubebuilder:validation:XValidation:rule="self == 0 || self >= 2",message="cycleRepeats must be 0 (off) or at least 2"`}},
		{monitor.Guard{Name: "stallTimeout", Kind: monitor.GuardDuration}, "*string",
			[]string{"kubebuilder:validation:Pattern=`^([0-9]{1,5}(\\.[0-9]+)?(ns|us|µs|ms|s|m|h)){1,4}$`", "kubebuilder:validation:MaxLength=32"}},
		{monitor.Guard{Name: "refuseWait", Kind: monitor.GuardDuration, Most: 5 * time.Second}, "*string",
			[]string{"kubebuilder:validation:Pattern=`^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s))+$`", "kubebuilder:validation:MaxLength=16",
				`kubebuilder:validation:XValidation:rule="duration(self) <= duration('5s')",message="must be at most 5s"`}},
		{monitor.Guard{Name: "answerAware", Kind: monitor.GuardBool}, "*bool", nil},
		{monitor.Guard{Name: "nudgeDelivery", Kind: monitor.GuardChoice, Choices: []string{"none", "file"}}, "*string",
			[]string{"kubebuilder:validation:Enum=none;file"}},
		{monitor.Guard{Name: "maxCostUSD", Kind: monitor.GuardCost}, "*string",
			[]string{"kubebuilder:validation:Pattern=`^[0-9]{1,9}(\\.[0-9]{1,9})?$`"}},
		{monitor.Guard{Name: "worldTools", Kind: monitor.GuardTools}, "[]string",
			[]string{"listType=set", "kubebuilder:validation:MaxItems=64", "kubebuilder:validation:items:MinLength=1", "kubebuilder:validation:items:MaxLength=256"}},
	} {
		f := guardField(c.gd, nil)
		if f.name != strings.ToUpper(c.gd.Name[:1])+c.gd.Name[1:] || f.json != c.gd.Name || f.typ != c.typ {
			t.Errorf("%s: field %s %s `json:%q`, want type %s", c.gd.Name, f.name, f.typ, f.json, c.typ)
		}
		if !slices.Equal(f.markers, c.markers) {
			t.Errorf("%s: markers\n%q\nwant\n%q", c.gd.Name, f.markers, c.markers)
		}
		if !strings.HasPrefix(f.doc, f.name+" ") {
			t.Errorf("%s: godoc %q does not start with the field's name", c.gd.Name, f.doc)
		}
	}
}

// A policy limits a detector's count, duration or cost guard, nothing else:
// a setting, a bool, a choice or a list has no "more".
func TestLimitedGuards(t *testing.T) {
	detectors := []monitor.Detector{
		{Name: "a", Class: "runaway", Guards: []monitor.Guard{
			{Name: "count", Kind: monitor.GuardCount}, {Name: "on", Kind: monitor.GuardBool}}},
		{Name: "b", Guards: []monitor.Guard{{Name: "wait", Kind: monitor.GuardDuration}}},
		{Name: "c", Class: "overspend", Guards: []monitor.Guard{
			{Name: "cost", Kind: monitor.GuardCost}, {Name: "mode", Kind: monitor.GuardChoice}, {Name: "tools", Kind: monitor.GuardTools}}},
	}
	var got []string
	for _, gd := range limitedGuards(detectors) {
		got = append(got, gd.Name)
	}
	if want := []string{"count", "wait", "cost"}; !slices.Equal(got, want) {
		t.Errorf("limited %v, want %v", got, want)
	}
}

// The generated API has a field, a Merge line and (for a limited guard) a
// limit for every guard, and the detectors' rule names every detector: a
// row added to the table is in the API once `make generate` runs.
func TestAPIGuardsFollowTheTable(t *testing.T) {
	detectors := []monitor.Detector{
		{Name: "loop", Class: "runaway", Guards: []monitor.Guard{{Name: "loopCalls", Kind: monitor.GuardCount, Help: "Loop."}}},
		{Name: "quiet", Guards: []monitor.Guard{{Name: "quietFor", Kind: monitor.GuardDuration, Help: "Quiet."}}},
		{Name: "end", Class: "length"},
	}
	setting := monitor.Guard{Name: "tools", Kind: monitor.GuardTools, Help: "Tools."}
	guards := append(append([]monitor.Guard{}, detectors[0].Guards...), detectors[1].Guards[0], setting)
	src, err := apiGuards(detectors, guards)
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for _, want := range []string{
		"LoopCalls *int32 `json:\"loopCalls,omitempty\"`",
		"QuietFor *string `json:\"quietFor,omitempty\"`",
		"Tools []string `json:\"tools,omitempty\"`",
		"override(&out.LoopCalls, o.LoopCalls)",
		"override(&out.QuietFor, o.QuietFor)",
		"overrideList(&out.Tools, o.Tools)",
		"// LoopCalls is a guard of the loop detector (class runaway). Loop.",
		"// QuietFor is a guard of the quiet detector, which nudges. Quiet.",
		"// Tools is a setting of the detectors. Tools.",
		"// LoopCalls is the largest loopCalls a run may ask.",
		"// QuietFor is the longest quietFor a run may ask, in Go duration",
		`rule="self.all(d, d in ['loop', 'quiet', 'end'])",message="every key must name a detector: loop, quiet, end"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("generated API lacks %q:\n%s", want, s)
		}
	}
	limits := s[strings.Index(s, "type GuardLimits struct"):]
	if strings.Contains(limits, "Tools") {
		t.Errorf("GuardLimits limits the setting tools:\n%s", limits)
	}
}

// Each limited guard gets one validation, comparing it as its kind says,
// named in the message by its spec.guards path.
func TestValidations(t *testing.T) {
	v, err := validations([]monitor.Guard{
		{Name: "loopCalls", Kind: monitor.GuardCount},
		{Name: "quietFor", Kind: monitor.GuardDuration},
		{Name: "cap", Kind: monitor.GuardCost},
	})
	if err != nil {
		t.Fatal(err)
	}
	items := strings.Split(v, "\n  - expression: ")
	if len(items) != 3 {
		t.Fatalf("%d validations, want 3:\n%s", len(items), v)
	}
	for i, want := range []string{
		"variables.guards.?loopCalls.value() <= variables.limits.?loopCalls.value()",
		"duration(variables.guards.?quietFor.value()) <= duration(variables.limits.?quietFor.value())",
		"!quantity(variables.guards.?cap.value()).isGreaterThan(quantity(variables.limits.?cap.value()))",
	} {
		if !strings.Contains(items[i], want) {
			t.Errorf("validation %d lacks %q:\n%s", i, want, items[i])
		}
	}
	if _, err := validations([]monitor.Guard{{Name: "on", Kind: monitor.GuardBool}}); err == nil {
		t.Error("a bool guard got a limit's validation")
	}
}

// The drill's enum is the scenarios, in order.
func TestAPIDrill(t *testing.T) {
	src, err := apiDrill([]string{"healthy", "stall"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "// +kubebuilder:validation:Enum=healthy;stall\n\t// +required\n\tScenario string `json:\"scenario\"`"; !strings.Contains(string(src), want) {
		t.Errorf("generated Drill lacks %q:\n%s", want, src)
	}
}

func TestWrap(t *testing.T) {
	text := strings.Repeat("word ", 40) + "a-long-unbreakable-" + strings.Repeat("x", 80)
	lines := wrap(text, 72)
	for _, l := range lines[:len(lines)-1] {
		if len(l) > 72 {
			t.Errorf("line of %d bytes: %q", len(l), l)
		}
	}
	if got := strings.Join(lines, " "); got != strings.TrimSpace(text) {
		t.Errorf("wrapped text reads %q", got)
	}
}

// The gateway policies list the key env vars given, in the three policies
// (a run's, a cluster policy's, an attached Pod's), as a CEL list; a name
// that would break the literal is refused.
func TestGatewayKeys(t *testing.T) {
	out, err := limitsPolicies(nil, []string{"A_KEY", "B_TOKEN"})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(out), `expression: "['A_KEY', 'B_TOKEN']"`); n != 3 {
		t.Errorf("the key list is in %d policies, want 3 (turnwatch-agentrun-gateway, turnwatch-agentrun-cluster-gateway, turnwatch-attach-gateway)", n)
	}
	if _, err := limitsPolicies(nil, []string{"A_KEY", "B'"}); err == nil {
		t.Error("a quote went into the CEL literal")
	}
}
