package sidecar

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/nudgefile"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// With nudgeDelivery file, the sidecar appends each nudge to the shared
// file and says on the Pod that it was delivered; with warnFirst the first
// loop trip becomes a warning there, and the next loop trips. Whatever the
// agent left in the file first does not stop the delivery.
func TestRunDeliversNudges(t *testing.T) {
	warning := monitor.WarningText("repeated an identical tool call 4 times")
	tests := []struct {
		name       string
		lines      []string
		warnFirst  bool
		delivery   string
		plant      string // what the agent wrote at the nudges file's name first
		noHook     bool   // no hook acknowledges what the file says
		settled    string
		silent     string // the Silent condition's reason/message
		wantRecs   []string
		trippedMsg string
		// hooksNotRun: the HooksNotRun condition is on the Pod.
		hooksNotRun bool
	}{
		{name: "warned, then the loop trips", lines: loopTurn(12), warnFirst: true, delivery: "file", settled: protocol.ConditionTripped,
			silent:   "IdenticalCalls/streak 1: warning (identicalCalls): " + warning + " [delivered to the agent]",
			wantRecs: []string{"1 identicalCalls true " + warning}, trippedMsg: "repeated an identical tool call 4 times"},
		{name: "warned, changes course and finishes", lines: append(loopTurn(5)[:len(loopTurn(5))-2], healthyTurn()[1:]...), warnFirst: true,
			delivery: "file", plant: "junk\n{\"seq\":", settled: protocol.ConditionFinished,
			silent:   "IdenticalCalls/streak 1: warning (identicalCalls): " + warning + " [delivered to the agent]",
			wantRecs: []string{"1 identicalCalls true " + warning}},
		{name: "silent run delivered", lines: silentTurn(14, true), delivery: "file", settled: protocol.ConditionFinished,
			silent:   "SilentRun/streak 1: 13 tool-only model messages since the agent last spoke: nobody can see tool calls; report what you have [delivered to the agent]",
			wantRecs: []string{"1 silentRun false 13 tool-only model messages since the agent last spoke: nobody can see tool calls; report what you have"}},
		{name: "not delivered: no warning, no file", lines: loopTurn(6), warnFirst: true, delivery: "none", settled: protocol.ConditionTripped,
			trippedMsg: "repeated an identical tool call 4 times"},
		{name: "written, no hook ran: not delivered, and said once", lines: loopTurn(12), warnFirst: true, delivery: "file", noHook: true, settled: protocol.ConditionTripped,
			silent:   "IdenticalCalls/streak 1: warning (identicalCalls): " + warning + " [not delivered to the agent: no hook acknowledged it by the second tool call after it]",
			wantRecs: []string{"1 identicalCalls true " + warning}, trippedMsg: "repeated an identical tool call 4 times", hooksNotRun: true},
		{name: "no nudge, no hook ran", lines: healthyTurn(), delivery: "file", noHook: true, settled: protocol.ConditionFinished, hooksNotRun: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.plant != "" {
				if err := os.WriteFile(filepath.Join(dir, nudgefile.File), []byte(tt.plant), 0o666); err != nil {
					t.Fatal(err)
				}
			}
			p := &syncPatcher{p: &podPatcher{t: t}}
			src := &scriptedSource{lines: tt.lines}
			if !tt.noHook {
				src.before = func() { ackAll(t, dir) }
			}
			r := testRunner(t, src, p, clock.RealClock{})
			r.cfg.Guards.NudgeDelivery, r.cfg.Guards.WarnFirst = tt.delivery, tt.warnFirst
			r.cfg.NudgeDir = dir
			runUntil(t, r, p, has(tt.settled))
			got, _ := p.conditions()
			s, ok := got[protocol.ConditionSilent]
			if tt.silent == "" && ok || tt.silent != "" && s.Reason+"/"+s.Message != tt.silent {
				t.Errorf("Silent = %s/%s\nwant %s", s.Reason, s.Message, tt.silent)
			}
			if _, ok := got[protocol.ConditionHooksNotRun]; ok != tt.hooksNotRun {
				t.Errorf("HooksNotRun on the Pod: %v, want %v", ok, tt.hooksNotRun)
			}
			if c := got[protocol.ConditionTripped]; c.Message != tt.trippedMsg {
				t.Errorf("Tripped = %q, want %q", c.Message, tt.trippedMsg)
			}
			b, _ := os.ReadFile(filepath.Join(dir, nudgefile.File))
			var recs []string
			for _, rec := range nudgefile.Parse(b) {
				recs = append(recs, strings.Join([]string{strconv.Itoa(rec.Seq), rec.Detector, btoa(rec.Warning), rec.Message}, " "))
			}
			if strings.Join(recs, "\n") != strings.Join(tt.wantRecs, "\n") {
				t.Errorf("nudges file %q\nrecords %q\nwant %q", b, recs, tt.wantRecs)
			}
		})
	}
}

// A sidecar that reads a fast CLI's lines late does not judge a nudge
// undelivered by calls whose lines the log wrote before the nudge was
// written (their hooks ran before it too): only calls begun after it
// count, so the hook that runs later is still heard.
func TestLateLinesDoNotCountAgainstDelivery(t *testing.T) {
	for _, tt := range []struct {
		name    string
		late    bool // the lines were written long before the sidecar read them
		message string
	}{
		{"lines read late: the later ack is heard", true, "[delivered to the agent]"},
		{"lines read as written: the second call after it settles it", false,
			"[not delivered to the agent: no hook acknowledged it by the second tool call after it]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			lines := silentTurn(20, true)
			p := &syncPatcher{p: &podPatcher{t: t}}
			start := time.Now()
			src := &scriptedSource{lines: lines, stamped: func(int) time.Time {
				if tt.late {
					return start
				}
				return time.Now()
			}}
			i := 0
			src.before = func() { // the hook runs only before the turn's last line
				if i++; i == len(lines) {
					ackAll(t, dir)
				}
			}
			r := testRunner(t, src, p, clock.RealClock{})
			r.cfg.Guards.NudgeDelivery, r.cfg.NudgeDir = "file", dir
			runUntil(t, r, p, has(protocol.ConditionFinished))
			got, _ := p.conditions()
			if s := got[protocol.ConditionSilent]; !strings.HasSuffix(s.Message, tt.message) {
				t.Errorf("Silent = %q, want it to end %q", s.Message, tt.message)
			}
		})
	}
}

// ackAll is a hook run by the agent: it acknowledges every nudge in dir.
func ackAll(t *testing.T, dir string) {
	b, _ := os.ReadFile(filepath.Join(dir, nudgefile.File))
	acks := nudgefile.EncodeAck(nudgefile.Ack{Time: time.Now(), CLI: "plain"})
	for _, rec := range nudgefile.Parse(b) {
		acks = append(acks, nudgefile.EncodeAck(nudgefile.Ack{Seq: rec.Seq, Time: time.Now(), CLI: "plain"})...)
	}
	if err := os.WriteFile(filepath.Join(dir, nudgefile.AckFile), acks, 0o644); err != nil {
		t.Error(err)
	}
}

func btoa(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
