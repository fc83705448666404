// Package testenv is the one envtest harness of turnwatch's suites (the
// controllers, the sidecar's RBAC and reporting, the chart, the samples)
// and the helpers they share.
//
// One gating convention: a suite that needs a real kube-apiserver and etcd
// runs when KUBEBUILDER_ASSETS names their binaries (`make test-envtest`
// sets it from hack/envtest.sh) and skips, saying so, when it is unset. No
// build tag: `go test ./...` compiles every suite and runs its unit tests.
//
// It lives under internal/ at the root, not test/internal, because Go lets
// only packages under an internal directory's parent import it, and the
// controllers, sidecar and charts packages import this one.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// AssetsEnv names the directory of the kube-apiserver and etcd binaries.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// skipMessage says why an envtest suite did not run and how to run it.
const skipMessage = "no envtest API server (" + AssetsEnv + " unset): run `make test-envtest`"

// Available says whether the API server's binaries are configured.
func Available() bool { return os.Getenv(AssetsEnv) != "" }

// Need skips t when no API server can be started.
func Need(t testing.TB) {
	t.Helper()
	if !Available() {
		t.Skip(skipMessage)
	}
}

// SkipNotice is what a TestMain prints when it runs a package's tests
// without starting the API server.
func SkipNotice() string {
	return AssetsEnv + " is not set: the envtest suites are skipped (run `make test-envtest`)"
}

// Root is the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Path is a path under the repository's root.
func Path(elem ...string) string {
	return filepath.Join(append([]string{Root()}, elem...)...)
}

// Start starts a kube-apiserver and etcd with the CRDs of crdDirs (paths
// under the repository's root; none: no CRDs).
func Start(crdDirs ...string) (*envtest.Environment, *rest.Config, error) {
	env := &envtest.Environment{ErrorIfCRDPathMissing: len(crdDirs) > 0}
	for _, d := range crdDirs {
		env.CRDDirectoryPaths = append(env.CRDDirectoryPaths, Path(d))
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("starting envtest (is %s set? hack/envtest.sh prints it): %w", AssetsEnv, err)
	}
	return env, cfg, nil
}

// StartT starts the API server for one test and stops it at its end; it
// skips the test when no API server can be started.
func StartT(t testing.TB, crdDirs ...string) (*envtest.Environment, *rest.Config) {
	t.Helper()
	Need(t)
	env, cfg, err := Start(crdDirs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return env, cfg
}
