package v1alpha1_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// apiGuardFields are the API's guard fields by JSON name. The API keeps its
// own fields (their kubebuilder markers make the CRD's schema); this test
// ties them to the engine's detector table.
func apiGuardFields() map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	t := reflect.TypeFor[twv1.Guards]()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out[name] = f
	}
	return out
}

// Every guard of the detector table has an API field of its kind, and every
// API guard field is a guard of the table.
func TestGuardsMatchDetectorTable(t *testing.T) {
	fields := apiGuardFields()
	want := map[monitor.GuardKind]reflect.Type{
		monitor.GuardCount:    reflect.TypeFor[*int32](),
		monitor.GuardDuration: reflect.TypeFor[*string](),
		monitor.GuardBool:     reflect.TypeFor[*bool](),
		monitor.GuardChoice:   reflect.TypeFor[*string](),
		monitor.GuardCost:     reflect.TypeFor[*string](),
		monitor.GuardTools:    reflect.TypeFor[[]string](),
	}
	for _, gd := range monitor.AllGuards() {
		f, ok := fields[gd.Name]
		if !ok {
			t.Errorf("guard %s has no field in api/v1alpha1 Guards", gd.Name)
			continue
		}
		if f.Type != want[gd.Kind] {
			t.Errorf("guard %s: the API field is %v, want %v", gd.Name, f.Type, want[gd.Kind])
		}
	}
	names := monitor.GuardNames()
	for name := range fields {
		if !slices.Contains(names, name) {
			t.Errorf("api/v1alpha1 Guards.%s is no guard of the detector table (pkg/monitor/detectors.go)", name)
		}
	}
}
