package monitor

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestDetectorTable: every row of the detector table is whole, and every
// list derived from it (the chain, the classes, warnFirst's loop detectors,
// the guards with their defaults) holds every detector.
func TestDetectorTable(t *testing.T) {
	classes := []string{ClassRunaway, ClassStalled, ClassDegenerate, ClassOverspend, ClassLength}
	if len(chain) != len(detectorTable) {
		t.Fatalf("the chain holds %d checks, the table %d detectors", len(chain), len(detectorTable))
	}
	seen := map[string]bool{}
	for i, d := range detectorTable {
		switch {
		case d.Name == "" || seen[d.Name]:
			t.Errorf("row %d: name %q empty or repeated", i, d.Name)
		case d.check == nil:
			t.Errorf("%s: no check", d.Name)
		case d.Class != "" && !slices.Contains(classes, d.Class):
			t.Errorf("%s: class %q is no fault class", d.Name, d.Class)
		case ClassOf(d.Name) != d.Class:
			t.Errorf("ClassOf(%s) = %q, the table says %q", d.Name, ClassOf(d.Name), d.Class)
		case reflect.ValueOf(chain[i].check).Pointer() != reflect.ValueOf(d.check).Pointer() || chain[i].at != d.at:
			t.Errorf("%s: the chain's %dth link is not its check", d.Name, i)
		case IsLoopDetector(d.Name) != (d.reset != nil):
			t.Errorf("%s: IsLoopDetector %v", d.Name, IsLoopDetector(d.Name))
		}
		seen[d.Name] = true
		for _, gd := range d.Guards {
			if !slices.Contains(GuardNames(), gd.Name) {
				t.Errorf("%s: guard %s is not among GuardNames", d.Name, gd.Name)
			}
		}
	}
	var loops []string
	for _, d := range Detectors() {
		if d.Loop() {
			loops = append(loops, d.Name)
		}
	}
	if want := []string{DetectorIdenticalCalls, DetectorCycles, DetectorRepeatedErrors}; !slices.Equal(loops, want) {
		t.Errorf("loop detectors %v, want %v", loops, want)
	}
}

// TestGuardTable: every guard has a field of its kind, a unique name, a
// help line, and a default that parses back to itself.
func TestGuardTable(t *testing.T) {
	kinds := map[GuardKind]reflect.Type{
		GuardCount: reflect.TypeFor[int](), GuardDuration: reflect.TypeFor[Duration](), GuardBool: reflect.TypeFor[bool](),
		GuardChoice: reflect.TypeFor[string](), GuardCost: reflect.TypeFor[string](), GuardTools: reflect.TypeFor[[]string](),
	}
	names := GuardNames()
	if len(names) != reflect.TypeFor[Guards]().NumField() {
		t.Errorf("%d guards in the table, %d fields in Guards", len(names), reflect.TypeFor[Guards]().NumField())
	}
	def := DefaultGuards()
	listed := map[string]bool{}
	for _, gd := range AllGuards() {
		if listed[gd.Name] {
			t.Errorf("guard %s is listed twice", gd.Name)
		}
		listed[gd.Name] = true
		if gd.Help == "" {
			t.Errorf("guard %s has no Help line for the chart's values.yaml", gd.Name)
		}
		if got := reflect.TypeOf(gd.Value(def)); got != kinds[gd.Kind] {
			t.Errorf("guard %s: field %v, kind wants %v", gd.Name, got, kinds[gd.Kind])
		}
		if v, ok := gd.Default(); ok && !reflect.DeepEqual(gd.Value(def), v) {
			t.Errorf("guard %s: DefaultGuards has %v, the table %v", gd.Name, gd.Value(def), v)
		}
		raw, _ := json.Marshal(gd.Value(def))
		g, err := ParseGuards([]byte(fmt.Sprintf("{%q:%s}", gd.Name, raw)))
		if err != nil {
			t.Errorf("guard %s: its default %s does not parse: %v", gd.Name, raw, err)
		} else if !reflect.DeepEqual(gd.Value(g), gd.Value(def)) {
			t.Errorf("guard %s: %s parses to %v", gd.Name, raw, gd.Value(g))
		}
	}
	// The JSON names of Guards are the table's.
	ty := reflect.TypeFor[Guards]()
	for i := range ty.NumField() {
		name, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ",")
		if !slices.Contains(names, name) {
			t.Errorf("Guards.%s (%s) is no guard of the table", ty.Field(i).Name, name)
		}
	}
}

// The one validator refuses what each guard's kind and range refuse.
func TestGuardValidatorRefuses(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"stallTimeout":"-1s"}`, "guards: stallTimeout: must be a non-negative duration"},
		{`{"toolTimeout":"ten"}`, "guards: toolTimeout:"},
		{`{"cycleRepeats":1}`, "guards: cycleRepeats: must be 0 (off) or at least 2"},
		{`{"errorRepeats":-1}`, "guards: errorRepeats: must be a non-negative integer"},
		{`{"refuseWait":"6s"}`, "guards: refuseWait: must be between 0s and 5s"},
		{`{"maxCostUSD":"-1"}`, "guards: maxCostUSD: must be a non-negative decimal"},
		{`{"nudgeDelivery":"socket"}`, `guards: nudgeDelivery: must be "none" or "file"`},
		{`{"answerAware":"yes"}`, "guards: answerAware: must be true or false"},
		{`{"worldTools":"run_tests"}`, "guards: worldTools: must be a list"},
		{`{"stepbudget":1}`, "guards: stepbudget: unknown guard"},
	} {
		_, err := ParseGuards([]byte(tc.in))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("ParseGuards(%s) = %v, want %q", tc.in, err, tc.want)
		}
	}
}
