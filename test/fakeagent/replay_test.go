package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

// fakeClock advances only when slept on, and records the sleeps.
type fakeClock struct {
	now    time.Time
	sleeps []time.Duration
}

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) Sleep(d time.Duration) {
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
}

func TestReplay(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		speed  float64
		out    string
		sleeps []time.Duration
	}{{
		name:   "gaps are kept and prefixes dropped",
		in:     "2026-01-05T09:00:00Z {\"a\":1}\n2026-01-05T09:00:01.5Z {\"b\":2}\n2026-01-05T09:00:04.5Z {\"c\":3}\n",
		speed:  1,
		out:    "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n",
		sleeps: []time.Duration{1500 * time.Millisecond, 3 * time.Second},
	}, {
		name:   "speed divides the gaps",
		in:     "2026-01-05T09:00:00Z x\n2026-01-05T09:20:00Z y\n",
		speed:  60,
		out:    "x\ny\n",
		sleeps: []time.Duration{20 * time.Second},
	}, {
		name:  "lines without a prefix are written at once",
		in:    "not a timestamp\n{\"type\":\"x\"}\n2026-01-05 09:00:00 y\n",
		speed: 1,
		out:   "not a timestamp\n{\"type\":\"x\"}\n2026-01-05 09:00:00 y\n",
	}, {
		name:  "equal timestamps do not sleep, CRLF and a missing last newline are handled",
		in:    "2026-01-05T09:00:00.000000001Z a\r\n2026-01-05T09:00:00.000000001Z b",
		speed: 1,
		out:   "a\nb\n",
	}, {
		name:   "nanosecond kubelet timestamps with offsets",
		in:     "2026-01-05T10:00:00.123456789+01:00 a\n2026-01-05T09:00:01.123456789Z b\n",
		speed:  2,
		out:    "a\nb\n",
		sleeps: []time.Duration{500 * time.Millisecond},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &fakeClock{now: time.Unix(1000, 0)}
			var out bytes.Buffer
			n, err := Replay(strings.NewReader(tt.in), &out, tt.speed, clk)
			if err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.out {
				t.Errorf("output %q, want %q", out.String(), tt.out)
			}
			if want := strings.Count(tt.out, "\n"); n != want {
				t.Errorf("%d lines, want %d", n, want)
			}
			if len(clk.sleeps) != len(tt.sleeps) {
				t.Fatalf("sleeps %v, want %v", clk.sleeps, tt.sleeps)
			}
			for i := range tt.sleeps {
				if clk.sleeps[i] != tt.sleeps[i] {
					t.Errorf("sleep %d = %v, want %v", i, clk.sleeps[i], tt.sleeps[i])
				}
			}
		})
	}
}

// lateClock loses 100 ms on every sleep: the schedule must not drift.
type lateClock struct{ fakeClock }

func (c *lateClock) Sleep(d time.Duration) { c.fakeClock.Sleep(d + 100*time.Millisecond) }

func TestReplayDoesNotDrift(t *testing.T) {
	var in strings.Builder
	for i := 0; i < 10; i++ {
		in.WriteString(base.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano))
		in.WriteString(" x\n")
	}
	clk := &lateClock{fakeClock{now: time.Unix(0, 0)}}
	if _, err := Replay(strings.NewReader(in.String()), &bytes.Buffer{}, 1, clk); err != nil {
		t.Fatal(err)
	}
	// 9 s of stream, each sleep 100 ms late: the last line is late by one sleep only.
	if got, want := clk.now.Sub(time.Unix(0, 0)), 9100*time.Millisecond; got != want {
		t.Errorf("replay took %v, want %v", got, want)
	}
}

func TestRunRefusesWhatAFormatCannotSay(t *testing.T) {
	tests := []struct {
		args []string
		code int
	}{
		{[]string{"--scenario", "whitespace", "--format", "codex"}, 2},
		{[]string{"--scenario", "lengthStop", "--format", "gemini"}, 2},
		{[]string{"--scenario", "nosuch", "--format", "pi"}, 2},
		{[]string{}, 2},
		{[]string{"--file", "testdata/does-not-exist"}, 2},
		{[]string{"--scenario", "noresult", "--format", "pi", "--speed", "1000", "--exit-code", "3"}, 3},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		if code := run(tt.args, &out, io.Discard); code != tt.code {
			t.Errorf("run %v = %d, want %d", tt.args, code, tt.code)
		}
	}
}

func TestRunPlaysAnEmbeddedScenario(t *testing.T) {
	var out bytes.Buffer
	if code := run([]string{"--scenario", "noresult", "--format", "codex", "--speed", "1000"}, &out, io.Discard); code != 0 {
		t.Fatalf("exit %d", code)
	}
	want := Generate()["codex/noresult"]
	var stripped strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(want, "\n"), "\n") {
		_, rest, _ := cutTimestamp(l)
		stripped.WriteString(rest + "\n")
	}
	if out.String() != stripped.String() {
		t.Errorf("played\n%s\nwant\n%s", out.String(), stripped.String())
	}
}
