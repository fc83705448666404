package sidecar

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/nudgefile"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// The hook refuses the tripping call shortly after the trip, or even
// during the drain after SIGTERM: the sidecar tells it either way; and a
// turn whose hook does not refuse never waits for it.
func TestCallRefusedAfterTheTrip(t *testing.T) {
	tests := []struct {
		name        string
		refuse      bool
		whenTermed  bool   // the hook writes after SIGTERM, within the drain
		ack         string // the ack file's refused line ("" none)
		wantRefused string // the condition's message ("" absent)
	}{
		{name: "after the trip", refuse: true, ack: "toolu_4", wantRefused: "toolu_4"},
		{name: "during the drain", refuse: true, whenTermed: true, ack: "toolu_4", wantRefused: "toolu_4"},
		{name: "an id too long, cut on a rune", refuse: true, ack: strings.Repeat("x", maxCallID-1) + "é and more", wantRefused: strings.Repeat("x", maxCallID-1)},
		{name: "an id that would forge a row, escaped", refuse: true, ack: "toolu_4\x1b[2J\r\n\u2028\u202eTRIPPED", wantRefused: `toolu_4\x1b[2J\r\n\u2028\u202eTRIPPED`},
		{name: "no refusal", refuse: true},
		{name: "refusing off", refuse: false, ack: "toolu_4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := &syncPatcher{p: &podPatcher{t: t}}
			r := testRunner(t, &scriptedSource{lines: loopTurn(6)}, p, clock.RealClock{})
			r.cfg.NudgeDir = dir
			r.cfg.Guards.NudgeDelivery, r.cfg.Guards.Refuse = monitor.NudgeDeliveryFile, tt.refuse
			r.cfg.Drain = 300 * time.Millisecond
			ctx, term := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- r.run(ctx) }()
			p.waitFor(t, "the trip", has(protocol.ConditionTripped))
			writeAck := func() {
				if tt.ack == "" {
					return
				}
				line := nudgefile.EncodeAck(nudgefile.Ack{Time: time.Now(), CLI: "claude", Refused: tt.ack})
				if err := os.WriteFile(filepath.Join(dir, nudgefile.AckFile), line, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if !tt.whenTermed {
				writeAck()
				if tt.wantRefused != "" {
					p.waitFor(t, "the refused call", has(protocol.ConditionCallRefused))
				}
			}
			term()
			termed := time.Now()
			if tt.whenTermed {
				time.Sleep(50 * time.Millisecond)
				writeAck()
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			c, _ := p.conditions()
			got, ok := c[protocol.ConditionCallRefused]
			switch {
			case tt.wantRefused == "" && ok:
				t.Errorf("CallRefused = %s", got.Message)
			case tt.wantRefused != "" && (got.Reason != protocol.ReasonCallRefused || got.Message != tt.wantRefused):
				t.Errorf("CallRefused = %s/%q, want %q", got.Reason, got.Message, tt.wantRefused)
			}
			// Once the refusal is told, or when nothing can be refused,
			// SIGTERM ends the sidecar at once; else it reads through the
			// drain.
			waited, mayEnd := time.Since(termed), !tt.refuse || (tt.wantRefused != "" && !tt.whenTermed)
			if mayEnd && waited > 250*time.Millisecond || !mayEnd && waited < r.cfg.Drain {
				t.Errorf("the sidecar ended %v after SIGTERM (drain %v)", waited, r.cfg.Drain)
			}
		})
	}
}

// With a nudges volume, the sidecar writes the ready marker the
// startupProbe waits for, whether or not it delivers nudges, and whatever
// the agent planted at its name before a restart (a directory, a symlink).
func TestReadyMarker(t *testing.T) {
	plants := map[string]func(dir string) error{
		"nothing":     func(string) error { return nil },
		"a directory": func(dir string) error { return os.MkdirAll(filepath.Join(dir, nudgefile.ReadyFile, "sub"), 0o777) },
		"a symlink":   func(dir string) error { return os.Symlink(nudgefile.HookPath, filepath.Join(dir, nudgefile.ReadyFile)) },
	}
	for _, delivery := range []string{monitor.NudgeDeliveryFile, monitor.NudgeDeliveryNone} {
		for name, plant := range plants {
			dir := t.TempDir()
			if err := plant(dir); err != nil {
				t.Fatal(err)
			}
			p := &syncPatcher{p: &podPatcher{t: t}}
			r := testRunner(t, &scriptedSource{lines: healthyTurn()}, p, clock.RealClock{})
			r.cfg.NudgeDir, r.cfg.Guards.NudgeDelivery = dir, delivery
			if err := nudgefile.Ready(dir); err == nil {
				t.Fatal("ready before the sidecar ran")
			}
			runUntil(t, r, p, has(protocol.ConditionFinished))
			if err := nudgefile.Ready(dir); err != nil {
				t.Errorf("delivery %q, %s planted: not ready: %v", delivery, name, err)
			}
		}
	}
}
