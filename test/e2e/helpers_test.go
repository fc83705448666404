//go:build e2e

package e2e

import (
	"fmt"
	"strings"
)

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

// describe returns `kubectl describe` of an object in the test namespace,
// for failure messages and for the assertions on what users read.
func describe(kind, name string) string {
	out, err := kubectl("-n", env.ns, "describe", kind, name)
	if err != nil {
		return err.Error()
	}
	return out
}

// containsAll reports the first of wants missing from s.
func containsAll(s string, wants ...string) (string, bool) {
	for _, w := range wants {
		if !strings.Contains(s, w) {
			return w, false
		}
	}
	return "", true
}
