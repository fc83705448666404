//go:build realcli

package realcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/nudgefile"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// refusesBeforeRun are the CLIs whose stream shows a call before its
// pre-tool hook runs, so the sidecar's verdict can come first (codex and
// opencode print a call only once it ran: docs/nudges.md).
var refusesBeforeRun = map[string]bool{"claude": true, "gemini": true, "pi": true}

// TestHooks runs each sample as written, with nudges delivered through
// /run/turnwatch as in a Pod (the hook and the adapters the sidecar
// writes): the silent-run nudge and warnFirst's warning reach the model and
// are acknowledged; the loop's next trip is the same trip, and where the
// CLI lets the sidecar judge a call first, the tripping call is refused
// before it runs and the CLI ends by itself.
func TestHooks(t *testing.T) {
	files, _ := filepath.Glob("../../config/samples/cli_*.yaml")
	guards := map[string]any{"nudgeDelivery": "file", "warnFirst": true}
	for _, f := range files {
		run := readSample(t, f)
		format := string(run.Spec.Format)
		t.Run(format, func(t *testing.T) {
			t.Run("silentRun", func(t *testing.T) {
				o := hookRun(t, run, "silentRun", guards)
				if !o.model.Told("turnwatch nudge (silentRun") {
					t.Errorf("the model never read the silent-run nudge")
				}
				for _, q := range o.model.Requests() {
					if b := string(q.Body); strings.Contains(b, "turnwatch nudge (silentRun") {
						t.Logf("%s: what the model read (request %d): %s", format, q.Seq, around(b, "turnwatch nudge (silentRun", 700))
						break
					}
				}
				if acks := readAcks(t); !acks.Ran || !acks.Delivered(1) {
					t.Errorf("the hook did not acknowledge nudge 1: %+v", acks)
				}
			})
			t.Run("warned", func(t *testing.T) {
				o := hookRun(t, run, "identicalLoop", guards)
				if !o.model.Told("turnwatch warning (identicalCalls") {
					t.Errorf("the model never read warnFirst's warning")
				}
				// Gemini CLI's own loop guard may end the loop first.
				if own := o.report.ResultError; o.trip == nil && !(format == "gemini" && strings.Contains(own, "Loop detected")) {
					t.Errorf("no trip after the warning (result error %q)", own)
				} else if o.trip != nil && o.trip.Detector != "identicalCalls" {
					t.Errorf("trip %+v, want identicalCalls", o.trip)
				}
			})
			t.Run("refused", func(t *testing.T) {
				marker := filepath.Join(t.TempDir(), "cat-ran")
				o := hookRun(t, run, "identicalLoop", map[string]any{"nudgeDelivery": "file"}, catShim(t, marker)...)
				if o.trip == nil || o.trip.Detector != "identicalCalls" {
					t.Fatalf("trip %+v, want identicalCalls, as without hooks", o.trip)
				}
				b, _ := os.ReadFile(filepath.Join(nudgefile.Dir, nudgefile.AckFile))
				refused := strings.Contains(string(b), `"refused"`)
				m, _ := os.ReadFile(marker)
				ran := strings.Count(string(m), "\n")
				t.Logf("%s: the loop's tool ran %d times; refused %v, ended %s, %v after the trip", format, ran, refused, o.ended, o.stopped)
				if refusesBeforeRun[format] && (!refused || o.ended != "itself" || ran != 3) {
					t.Errorf("the 4th identical call was not refused before it ran: the tool ran %d times (want 3), refused %v, ended %s; acks %s", ran, refused, o.ended, b)
				}
			})
		})
	}
}

// catShim puts a cat first on the CLI's PATH that counts its runs in
// marker (a line each) before it runs the real one: the loop's tool call
// reads a file with cat.
func catShim(t *testing.T, marker string) []string {
	dir := t.TempDir()
	script := "#!/bin/sh\necho ran >> " + marker + "\nexec /bin/cat \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "cat"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return []string{"PATH=" + dir + ":" + clisDir + ":" + os.Getenv("PATH")}
}

// hookRun plays a scenario to a sample with a clean nudges volume; extra is
// env for the CLI (the last value of a name wins).
func hookRun(t *testing.T, run *twv1.AgentRun, scenario string, guards map[string]any, extra ...string) outcome {
	t.Helper()
	for _, name := range []string{nudgefile.File, nudgefile.AckFile, nudgefile.VerdictFile, "hook-state.json", "hook-calls.json"} {
		os.Remove(filepath.Join(nudgefile.Dir, name))
	}
	sc, err := scriptedmodel.Lookup(scenario)
	if err != nil {
		t.Fatal(err)
	}
	return runWith(t, "hooks-"+string(run.Spec.Format), string(run.Spec.Format), sampleLaunch(run, extra), sc, scriptedmodel.Options{}, guards, t.TempDir())
}

func readAcks(t *testing.T) nudgefile.Acks {
	a, err := nudgefile.ReadAcks(nudgefile.Dir)
	if err != nil {
		t.Error(err)
	}
	return a
}
