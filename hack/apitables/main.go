// Command apitables writes the API's copies of the tables, so that each
// fact is written once:
//
//   - from the detector table (pkg/monitor/detectors.go), the API's
//     guards: the Guards and GuardLimits types with their kubebuilder
//     markers and godoc, Guards.Merge, and DetectorPolicies, whose rule
//     lists the detectors' names (api/v1alpha1/zz_generated.guards.go);
//     and the per-guard validations of the limits admission policies
//     (config/sidecar/validatingadmissionpolicy_limits.yaml);
//   - from the CLIs' table (pkg/agents), the model key env vars that the
//     gateway admission policies refuse in a template, or in an attached
//     Pod, where a policy requires the gateway, and the formats an attached
//     Pod's gateway can point (the same file);
//   - from the scripted model's scenarios (pkg/scriptedmodel), the Drill
//     type, whose enum lists them (api/v1alpha1/zz_generated.drill.go);
//   - from the CLIs' table (pkg/agents), the Format type, whose enum lists
//     every CLI's format and auto (api/v1alpha1/zz_generated.format.go);
//   - from the Pod renderer (controllers/render), the attach admission
//     policy (config/sidecar/mutatingadmissionpolicy_attach.yaml), which
//     injects a turn Pod's sidecar into an attached Pod, and points its
//     agent at the model gateway as the renderer points a turn's.
//
// `make generate` runs it before controller-gen, which makes the CRDs and
// the deep copies from the generated types; `make verify-generated` fails
// when a file is stale. The per-kind forms (a guard's type, markers and
// godoc, a limit's CEL validation) are here; the patterns and bounds come
// from api/v1alpha1, whose hand-written files hold nothing per guard, so
// the package compiles, and apitables runs, whatever the table says.
//
//	go run ./hack/apitables [REPO_ROOT]
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"turnwatch.dev/turnwatch/pkg/agents"
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// output is one file apitables writes, by its path from the repository's
// root.
type output struct {
	path  string
	write func() ([]byte, error)
}

func outputs() []output {
	return []output{
		{"api/v1alpha1/zz_generated.guards.go", func() ([]byte, error) {
			return apiGuards(monitor.Detectors(), monitor.AllGuards())
		}},
		{"api/v1alpha1/zz_generated.drill.go", func() ([]byte, error) {
			return apiDrill(scriptedmodel.Names())
		}},
		{"api/v1alpha1/zz_generated.format.go", func() ([]byte, error) {
			return apiFormat(append(agents.Formats(), agents.Auto))
		}},
		{"config/sidecar/mutatingadmissionpolicy_attach.yaml", attachPolicy},
		{"config/sidecar/validatingadmissionpolicy_limits.yaml", func() ([]byte, error) {
			return limitsPolicies(limitedGuards(monitor.Detectors()), agents.KeyEnvs())
		}},
	}
}

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	for _, o := range outputs() {
		if err := writeFile(filepath.Join(root, o.path), o.write); err != nil {
			fmt.Fprintf(os.Stderr, "apitables: %s: %v\n", o.path, err)
			os.Exit(1)
		}
	}
}

// writeFile writes what write makes to path, leaving a file that is
// already so untouched.
func writeFile(path string, write func() ([]byte, error)) error {
	out, err := write()
	if err != nil {
		return err
	}
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, out) {
		return nil
	}
	return os.WriteFile(path, out, 0o644)
}
