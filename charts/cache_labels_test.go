package charts_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"turnwatch.dev/turnwatch/controllers"
)

// The sidecar RBAC objects the chart makes are in the manager's cache:
// otherwise the manager, not seeing them, tries to create both again
// for every Pod it starts (two failed writes a turn).
func TestSidecarRBACInManagerCache(t *testing.T) {
	selectors := map[string]labels.Selector{}
	for obj, by := range controllers.CacheByObject() {
		selectors[fmt.Sprintf("%T", obj)] = by.Label
	}
	kinds := map[string]string{"ServiceAccount": "*v1.ServiceAccount", "RoleBinding": "*v1.RoleBinding"}
	objs := render(t, "--set", "sidecar.rbac.namespaces={agents}")
	for kind, goType := range kinds {
		sel, ok := selectors[goType]
		if !ok {
			t.Fatalf("the manager's cache has no selector for %s", kind)
		}
		o := find(t, objs, kind, "agents", "turnwatch-sidecar")
		m, _ := o["metadata"].(map[string]any)
		set := labels.Set{}
		if ls, ok := m["labels"].(map[string]any); ok {
			for k, v := range ls {
				set[k], _ = v.(string)
			}
		}
		if !sel.Matches(set) {
			t.Errorf("%s turnwatch-sidecar labelled %v is outside the manager's cache (%s)", kind, set, sel)
		}
	}
}
