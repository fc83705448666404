package main

import (
	"strings"
	"testing"

	"turnwatch.dev/turnwatch/internal/testenv"
)

func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb testenv.SyncBuffer
	code = dispatch(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestDispatch(t *testing.T) {
	if code, _, errs := run(t, "", "nope"); code != 2 || !strings.Contains(errs, `unknown command "nope"`) || !strings.Contains(errs, "replay") {
		t.Fatalf("code %d stderr %q", code, errs)
	}
	if code, _, errs := run(t, ""); code != 2 || !strings.Contains(errs, "watch") {
		t.Fatalf("code %d stderr %q", code, errs)
	}
}
