package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/nudgefile"
	"turnwatch.dev/turnwatch/sidecar"
)

// exitTripped is watch's exit code when a detector stopped the child.
const exitTripped = 3

func init() {
	commands["watch"] = command{
		summary: "run an agent locally, apply the detectors live, stop it on a trip",
		run:     runWatch,
	}
}

// runWatch: watch --format FORMAT [--guards FILE] [--grace D] -- COMMAND...
//
// The child's stdout is passed through unchanged; its stdin and stderr are
// ours. Detectors run live, the stall from the real clock. On a trip the
// child's process group gets SIGTERM, then SIGKILL after the grace period;
// the trip is printed as one JSON line on stderr, then {"ended":"stopped"}
// (or "itself", when the child ended before it was sent SIGTERM: with
// --nudge-dir and guards that refuse, it has refuseWait and a second to),
// and watch exits 3. Nudges
// are printed as {"nudge":{...}} lines on stderr and the run goes on.
// Otherwise watch exits with the child's exit code.
func runWatch(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var ef engineFlags
	ef.register(fs)
	grace := fs.Duration("grace", 10*time.Second, "time between SIGTERM and SIGKILL when stopping the child")
	tick := fs.Duration("tick", time.Second, "how often the stall is judged from the clock")
	nudgeDir := fs.String("nudge-dir", "", "also write each nudge to DIR/"+nudgefile.File+", where turnwatch-hook reads it (as the sidecar does with nudgeDelivery file)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: turnwatch-sidecar watch [--format FORMAT] [--guards FILE] [--grace D] -- COMMAND [ARGS...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	opts, err := ef.options()
	if err != nil {
		fmt.Fprintln(stderr, "watch:", err)
		return 2
	}
	eng, err := monitor.New(opts)
	if err != nil {
		fmt.Fprintln(stderr, "watch:", err)
		return 2
	}
	w := &watcher{eng: eng, stderr: stderr, grace: *grace, nudgeDir: *nudgeDir}
	return w.run(fs.Args(), stdin, stdout, ef.maxLine, *tick)
}

// watcher owns the engine (guarded by mu: lines and ticks arrive on
// different goroutines) and the child.
type watcher struct {
	mu      sync.Mutex
	eng     *monitor.Engine
	stderr  io.Writer
	grace   time.Duration
	cmd     *exec.Cmd
	tripped bool
	// nudgeDir, when set, receives each nudge for the agent's hook, and
	// the verdict on each call when the guards refuse.
	nudgeDir string
	calls    sidecar.Calls
	// signaled is set once the child was sent SIGTERM after a trip.
	signaled atomic.Bool
	exited   chan struct{}
}

func (w *watcher) run(argv []string, stdin io.Reader, stdout io.Writer, maxLine int, tick time.Duration) int {
	w.cmd = exec.Command(argv[0], argv[1:]...)
	w.cmd.Stdin, w.cmd.Stderr = stdin, w.stderr
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // stop the agent and what it spawned
	pipe, err := w.cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(w.stderr, "watch:", err)
		return 1
	}
	if err := w.cmd.Start(); err != nil {
		fmt.Fprintln(w.stderr, "watch:", err)
		return 127
	}
	w.exited = make(chan struct{})
	stopSignals := w.forwardSignals()
	defer stopSignals()

	done := make(chan struct{})
	go w.ticker(tick, done)

	// Pass every byte through as it is read, and feed the lines.
	loop := monitor.Loop{
		Clock:  time.Now,
		Before: w.mu.Lock,
		After: func(f monitor.Fed) {
			w.report(f.Verdicts, !f.Skipped)
			w.mu.Unlock()
		},
	}
	_ = loop.Run(w.eng, monitor.NewLineReader(io.TeeReader(pipe, stdout), maxLine)) // as before: a read error ends the stream
	close(done)
	waitErr := w.cmd.Wait()
	close(w.exited)

	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.tripped {
		w.report(w.eng.Finish(), false)
	}
	if w.tripped {
		ended := "itself" // the hook refused the tripping call and the CLI ended its turn
		if w.signaled.Load() {
			ended = "stopped"
		}
		writeJSONLine(w.stderr, map[string]string{"ended": ended})
		return exitTripped
	}
	var exitErr *exec.ExitError
	if errors.As(waitErr, &exitErr) {
		if code := exitErr.ExitCode(); code > 0 {
			return code
		}
		return 1 // killed by a signal
	}
	return 0
}

// ticker judges the stall from the real clock while no line arrives.
func (w *watcher) ticker(every time.Duration, done <-chan struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			w.mu.Lock()
			if trip := w.eng.Tick(now); trip != nil {
				w.report(monitor.Verdicts{Trip: trip}, false)
			}
			w.mu.Unlock()
		}
	}
}

// report prints nudges and a trip on stderr; a trip stops the child.
// Called with mu held.
func (w *watcher) report(v monitor.Verdicts, parsed bool) {
	if w.nudgeDir != "" && w.eng.State().Guards.Refuses() && !w.tripped {
		if vs := w.calls.Judge(w.eng, v.Trip, parsed); len(vs) > 0 {
			if err := nudgefile.AppendVerdicts(w.nudgeDir, vs); err != nil {
				fmt.Fprintln(w.stderr, "watch: writing verdicts:", err)
			}
		}
	}
	first := w.eng.NudgeCount() - len(v.Nudges) + 1
	for i, n := range v.Nudges {
		writeJSONLine(w.stderr, map[string]monitor.Nudge{"nudge": n})
		if w.nudgeDir == "" {
			continue
		}
		rec := nudgefile.Record{Seq: first + i, Time: time.Now(), Detector: n.Detector, Message: n.Message, Line: n.Line, Warning: n.Detector != monitor.DetectorSilentRun}
		if err := nudgefile.Append(w.nudgeDir, rec); err != nil {
			fmt.Fprintln(w.stderr, "watch: delivering a nudge:", err)
		}
	}
	if v.Trip == nil || w.tripped {
		return
	}
	w.tripped = true
	writeJSONLine(w.stderr, v.Trip)
	var leeway time.Duration
	if g := w.eng.State().Guards; w.nudgeDir != "" && g.Refuses() {
		// The agent's hook refuses the tripping call and ends the CLI's
		// turn: let it end by itself first.
		leeway = time.Duration(g.RefuseWait) + time.Second
	}
	go w.stop(leeway)
}

// stop sends SIGTERM to the child's process group once it has had leeway
// to exit by itself, then SIGKILL if it has not exited after the grace
// period.
func (w *watcher) stop(leeway time.Duration) {
	select {
	case <-w.exited:
		return
	case <-time.After(leeway):
	}
	pgid := w.cmd.Process.Pid
	w.signaled.Store(true)
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-w.exited:
	case <-time.After(w.grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// forwardSignals passes SIGINT and SIGTERM on to the child's group.
func (w *watcher) forwardSignals() (stop func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	quit := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-ch:
				_ = syscall.Kill(-w.cmd.Process.Pid, s.(syscall.Signal))
			case <-quit:
				return
			}
		}
	}()
	return func() { signal.Stop(ch); close(quit) }
}

func writeJSONLine(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	w.Write(append(b, '\n'))
}
