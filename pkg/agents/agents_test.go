package agents

import (
	"path"
	"slices"
	"strings"
	"testing"
)

// Every row says all that the other parts derive from it: a CLI missing a
// state folder would mount its session store at HOME itself, one missing
// an endpoint could not be drilled.
func TestEveryCLIIsComplete(t *testing.T) {
	hooks := []string{HookClaude, HookCodex, HookGemini, HookAdapter}
	seen := map[string]bool{}
	for _, c := range CLIs {
		switch {
		case c.Format == "" || c.Format == Auto || seen[c.Format]:
			t.Errorf("format %q: want a name of its own, not auto", c.Format)
		case !underHome(c.StateDir):
			t.Errorf("%s: state folder %q: want a clean folder under HOME", c.Format, c.StateDir)
		case c.Endpoint.Env == "" || len(c.Endpoint.Keys) == 0:
			t.Errorf("%s: endpoint %+v: want its env and key env", c.Format, c.Endpoint)
		case !slices.Contains(hooks, c.Hook):
			t.Errorf("%s: hook protocol %q: want one of %v", c.Format, c.Hook, hooks)
		case !refuses(c.Refusal):
			t.Errorf("%s: refusal status %d: want a 4xx that no client retries (not 408, 409, 429)", c.Format, c.Refusal)
		}
		seen[c.Format] = true
	}
}

// refuses says a status is a client error that the APIs' SDKs do not
// retry by rule (408, 409 and 429 they do).
func refuses(status int) bool {
	return status >= 400 && status < 500 && !slices.Contains([]int{408, 409, 429}, status)
}

// underHome says dir is a folder under HOME, not HOME itself.
func underHome(dir string) bool {
	return dir != "" && !path.IsAbs(dir) && path.Clean(dir) == dir && dir != "." && dir != ".." && !strings.HasPrefix(dir, "../")
}

// Every exception says one thing; only a CLI that never shows deltas (stop
// reasons) is blind for the want of them.
func TestExceptionsSayOneThing(t *testing.T) {
	for _, c := range CLIs {
		for name, ex := range c.Exceptions {
			n := 0
			for _, set := range []bool{ex.Blind != "", ex.NoDeltas, ex.NoStop, ex.Own != ""} {
				if set {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s %s: %+v: want exactly one of Blind, NoDeltas, NoStop and Own", c.Format, name, ex)
			}
			if ex.NoDeltas && c.HidesDeltas() == "" {
				t.Errorf("%s %s: NoDeltas, but its DeltasFix %q names a fix", c.Format, name, c.DeltasFix)
			}
			if ex.NoStop && c.HidesStop() == "" {
				t.Errorf("%s %s: NoStop, but its StopFix %q names a fix", c.Format, name, c.StopFix)
			}
		}
	}
}

func TestHidesDeltas(t *testing.T) {
	for _, tt := range []struct{ fix, want string }{
		{"", ""},
		{"run claude with --include-partial-messages", ""},
		{"none: codex exec --json prints whole messages", "codex exec --json prints whole messages"},
	} {
		if got := (CLI{DeltasFix: tt.fix}).HidesDeltas(); got != tt.want {
			t.Errorf("HidesDeltas of %q = %q, want %q", tt.fix, got, tt.want)
		}
	}
}

func TestUnderHome(t *testing.T) {
	for dir, want := range map[string]bool{".claude": true, ".local/share/opencode": true, "..x": true,
		"": false, ".": false, "..": false, "../x": false, "/root/.pi": false, ".pi/": false} {
		if underHome(dir) != want {
			t.Errorf("underHome(%q) = %v, want %v", dir, !want, want)
		}
	}
}

func TestLookup(t *testing.T) {
	if c, ok := Lookup("opencode"); !ok || c.StateDir != ".local/share/opencode" {
		t.Errorf("Lookup(opencode) = %+v, %v", c, ok)
	}
	for _, f := range []string{Auto, "", "aider"} {
		if _, ok := Lookup(f); ok {
			t.Errorf("Lookup(%q) found a CLI", f)
		}
	}
	if got := Formats(); len(got) != len(CLIs) || got[0] != CLIs[0].Format {
		t.Errorf("Formats() = %v", got)
	}
}

func TestRefuses(t *testing.T) {
	for status, want := range map[int]bool{400: true, 402: true, 403: true, 0: false, 200: false, 408: false, 409: false, 429: false, 500: false, 529: false} {
		if refuses(status) != want {
			t.Errorf("refuses(%d) = %v, want %v", status, !want, want)
		}
	}
}
