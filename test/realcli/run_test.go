//go:build realcli

package realcli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/nudgefile"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// prompt is the samples' own task.
const prompt = "Read /etc/os-release and say in one sentence which Linux distribution this container runs."

// outcome is what one run of a CLI gave.
type outcome struct {
	report monitor.Report // replay of the whole stream, as the sidecar reads it
	trip   *monitor.Trip  // what watch stopped the CLI for (nil: none)
	nudges []monitor.Nudge
	exit   int // watch's exit code (3: tripped)
	// ended says how the CLI ended after a trip: "itself" (its hook refused
	// the tripping call and ended its turn) or "stopped" (SIGTERM).
	ended string
	// stopped is how long the CLI took to be gone after watch's trip.
	stopped time.Duration
	model   *scriptedmodel.Server // nil for runOn's own handler
	stream  string                // the CLI's stdout, as recorded
	// exited is when watch, and so the CLI, was gone.
	exited time.Time
}

// launch is how one run starts its CLI: the command and its environment
// (besides PATH and HOME), given the model's URL, HOME and the work folder.
type launch func(model, home, work string) (argv, env []string, err error)

// run plays scenario to a CLI through `turnwatch-sidecar watch`, then
// replays what it printed. guards are the guards file's fields.
func run(t *testing.T, c cli, sc scriptedmodel.Scenario, opts scriptedmodel.Options, guards map[string]any) outcome {
	return runWith(t, c.name, c.format, cliLaunch(c), sc, opts, guards, t.TempDir())
}

// cliLaunch is how run starts c.
func cliLaunch(c cli) launch {
	return func(model, home, work string) ([]string, []string, error) {
		if c.files != nil {
			if err := writeFiles(c.files(model), home, work); err != nil {
				return nil, nil, err
			}
		}
		if c.seed != nil {
			if err := c.seed(home); err != nil {
				return nil, nil, err
			}
		}
		argv := []string{filepath.Join(clisDir, c.name)}
		if c.node != nil {
			argv = append(append([]string{"node"}, c.node...), argv...)
		}
		return append(argv, c.args(prompt)...), c.env(model), nil
	}
}

// runWith runs start's command in dir (its home and work folders there: a
// second run in the same dir finds what the first left, as a CLI's state
// on a session store).
func runWith(t *testing.T, name, format string, start launch, sc scriptedmodel.Scenario, opts scriptedmodel.Options, guards map[string]any, dir string) outcome {
	t.Helper()
	opts.Scenario = sc
	model, err := scriptedmodel.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	o := runOn(t, name, format, start, sc.Name, model, guards, dir)
	o.model = model
	return o
}

// runOn runs start's command against model, a handler served on a port of
// the loopback (the scripted model, or a handler in front of it); scenario
// names the run in messages and recordings.
func runOn(t *testing.T, name, format string, start launch, scenario string, model http.Handler, guards map[string]any, dir string) outcome {
	t.Helper()
	url, stop, err := serveLoopback(model)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return runAt(t, name, format, start, scenario, url, guards, dir)
}

// runAt runs start's command against the model at url (a process of its
// own: the sidecar's gateway).
func runAt(t *testing.T, name, format string, start launch, scenario, url string, guards map[string]any, dir string) outcome {
	t.Helper()
	home, work := filepath.Join(dir, "home"), filepath.Join(dir, "work")
	for _, d := range []string{home, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmdline, env, err := start(url, home, work)
	if err != nil {
		t.Fatal(err)
	}
	run, err := os.MkdirTemp(dir, "run-")
	if err != nil {
		t.Fatal(err)
	}
	guardsFile := filepath.Join(run, "guards.json")
	if err := os.WriteFile(guardsFile, []byte(mustJSON(guards)), 0o644); err != nil {
		t.Fatal(err)
	}
	streamFile := filepath.Join(run, "stream.jsonl")
	stream, err := os.Create(streamFile)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()

	mark := calls.mark()
	argv := []string{"watch", "--format", format, "--guards", guardsFile, "--grace", "10s", "--tick", "200ms"}
	if guards["nudgeDelivery"] == "file" {
		argv = append(argv, "--nudge-dir", nudgefile.Dir) // where the samples' hooks look
		env = append(env, nudgefile.EnvDir+"="+nudgefile.Dir, nudgefile.EnvRefuseWait+"=2s")
	}
	argv = append(append(argv, "--"), cmdline...)
	cmd := exec.Command(sidecarBin, argv...)
	cmd.Dir = work
	cmd.Env = append([]string{"PATH=" + clisDir + ":" + os.Getenv("PATH"), "HOME=" + home, "TERM=dumb", "LANG=C.UTF-8"}, env...)
	cmd.Stdout = stream
	cmd.Stdin = nil
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var o outcome
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var tripAt time.Time
	var errText bytes.Buffer
	sc2 := bufio.NewScanner(stderr)
	sc2.Buffer(make([]byte, 1<<20), 1<<20)
	// A CLI that hangs is stopped by watch (SIGTERM to its group, SIGKILL
	// after the grace), so the test ends and says so.
	timer := time.AfterFunc(runLimit, func() {
		t.Errorf("%s/%s still running after %v: stopping it", name, scenario, runLimit)
		cmd.Process.Signal(syscall.SIGTERM)
	})
	defer timer.Stop()
	for sc2.Scan() {
		line := sc2.Bytes()
		var n struct {
			Nudge *monitor.Nudge `json:"nudge"`
		}
		var tr monitor.Trip
		var end struct{ Ended string }
		switch {
		case json.Unmarshal(line, &n) == nil && n.Nudge != nil:
			o.nudges = append(o.nudges, *n.Nudge)
		case json.Unmarshal(line, &end) == nil && end.Ended != "":
			o.ended = end.Ended
		case o.trip == nil && json.Unmarshal(line, &tr) == nil && tr.Detector != "":
			o.trip, tripAt = &tr, time.Now()
		default:
			errText.Write(line)
			errText.WriteByte('\n')
		}
	}
	waitErr := cmd.Wait()
	o.exited = time.Now()
	if o.trip != nil {
		o.stopped = time.Since(tripAt)
	}
	o.exit = cmd.ProcessState.ExitCode()
	if waitErr != nil && o.exit != 3 {
		t.Logf("%s exited %d: %v\nstderr:\n%s", name, o.exit, waitErr, tail(errText.String(), 3000))
	}
	if got := calls.since(mark); len(got) > 0 {
		t.Errorf("%s tried to reach something besides the scripted model: %v", name, got)
	}
	b, err := os.ReadFile(streamFile)
	if err != nil {
		t.Fatal(err)
	}
	o.stream = string(b)
	keep(t, name, scenario, b)
	o.report = replay(t, format, guardsFile, streamFile)
	return o
}

// serveLoopback serves h on a free port of 127.0.0.1 and returns its URL
// and a func that stops it.
func serveLoopback(h http.Handler) (url string, stop func(), err error) {
	if s, ok := h.(*scriptedmodel.Server); ok {
		return s.ServeLoopback() // its own limits
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	return "http://" + ln.Addr().String(), func() { hs.Close() }, nil
}

// replay is the sidecar's replay of a recorded stream.
func replay(t *testing.T, format, guards, file string) monitor.Report {
	t.Helper()
	out, err := exec.Command(sidecarBin, "replay", "--format", format, "--guards", guards, file).Output()
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	var r monitor.Report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("replay's report: %v: %s", err, out)
	}
	return r
}

// keep copies a recorded stream to TURNWATCH_REALCLI_RECORD/<cli>/<scenario>.jsonl
// when that is set: the fixtures of pkg/monitor/testdata/real come from here.
func keep(t *testing.T, cliName, scenario string, b []byte) {
	dir := os.Getenv("TURNWATCH_REALCLI_RECORD")
	if dir == "" {
		return
	}
	p := filepath.Join(dir, cliName, scenario+".jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
		os.WriteFile(p, b, 0o644)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// runLimit bounds one run of a CLI: every scenario ends well within it.
var runLimit = 90 * time.Second
