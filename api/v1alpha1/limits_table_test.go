package v1alpha1_test

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

// Every field of GuardLimits is a threshold of a detector (a count, a
// duration or a cost: a setting such as worldTools has no "more"), of the
// guard's own type, and every detector's threshold has a limit.
func TestLimitsMatchDetectorTable(t *testing.T) {
	limits := map[string]reflect.Type{}
	lt := reflect.TypeFor[twv1.GuardLimits]()
	for i := range lt.NumField() {
		name, _, _ := strings.Cut(lt.Field(i).Tag.Get("json"), ",")
		limits[name] = lt.Field(i).Type
	}
	guards := apiGuardFields()
	thresholds := map[string]bool{}
	for _, d := range monitor.Detectors() {
		for _, gd := range d.Guards {
			switch gd.Kind {
			case monitor.GuardCount, monitor.GuardDuration, monitor.GuardCost:
				thresholds[gd.Name] = true
			}
		}
	}
	for name, typ := range limits {
		if !thresholds[name] {
			t.Errorf("GuardLimits.%s is no count, duration or cost guard of a detector (pkg/monitor/detectors.go)", name)
			continue
		}
		if want := guards[name].Type; typ != want {
			t.Errorf("GuardLimits.%s is %v, Guards.%s is %v", name, typ, name, want)
		}
	}
	for name := range thresholds {
		if _, ok := limits[name]; !ok {
			t.Errorf("guard %s of the detector table has no field in GuardLimits", name)
		}
	}
}

// The CRDs' rule on the keys of spec.detectors lists the detector table's
// names, in table order, and its message says the same list.
func TestDetectorKeysMatchDetectorTable(t *testing.T) {
	var names []string
	for _, d := range monitor.Detectors() {
		names = append(names, d.Name)
	}
	quoted := "'" + strings.Join(names, "', '") + "'"
	wantRule := "self.all(d, d in [" + quoted + "])"
	wantMessage := "every key must name a detector: " + strings.Join(names, ", ")
	for _, kind := range []string{"turnpolicies", "clusterturnpolicies"} {
		path := filepath.Join("..", "..", "config", "crd", "bases", "turnwatch.dev_"+kind+".yaml")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var crd struct {
			Spec struct {
				Versions []struct {
					Schema struct {
						OpenAPIV3Schema struct {
							Properties map[string]struct {
								Properties map[string]struct {
									Validations []struct{ Rule, Message string } `json:"x-kubernetes-validations"`
								}
							}
						} `json:"openAPIV3Schema"`
					}
				}
			}
		}
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatal(err)
		}
		if len(crd.Spec.Versions) == 0 {
			t.Fatalf("%s: no version", path)
		}
		for _, v := range crd.Spec.Versions {
			rules := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties["detectors"].Validations
			if !slices.ContainsFunc(rules, func(r struct{ Rule, Message string }) bool {
				return r.Rule == wantRule && r.Message == wantMessage
			}) {
				t.Errorf("%s: spec.detectors has rules %+v, want rule %q with message %q (edit the marker in turnpolicy_types.go, then `make manifests`)", path, rules, wantRule, wantMessage)
			}
		}
	}
}
