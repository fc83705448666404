package nudgefile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func rec(seq int, msg string) Record {
	return Record{Seq: seq, Time: time.Unix(1700000000, 0), Detector: "silentRun", Message: msg, Line: seq * 10}
}

// Whatever the agent left at the file's name, the sidecar's write lands in
// a regular file of the volume, never through a symlink, never blocks on a
// fifo, and later nudges keep being written.
func TestAppendRefusesWhatTheAgentPlanted(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, dir, outside string)
	}{
		{"nothing", func(t *testing.T, dir, outside string) {}},
		{"a symlink out of the volume", func(t *testing.T, dir, outside string) {
			if err := os.Symlink(outside, filepath.Join(dir, File)); err != nil {
				t.Fatal(err)
			}
		}},
		{"a relative symlink escaping", func(t *testing.T, dir, outside string) {
			rel, _ := filepath.Rel(dir, outside)
			if err := os.Symlink(rel, filepath.Join(dir, File)); err != nil {
				t.Fatal(err)
			}
		}},
		{"a fifo", func(t *testing.T, dir, outside string) {
			if err := syscall.Mkfifo(filepath.Join(dir, File), 0o666); err != nil {
				t.Fatal(err)
			}
		}},
		{"a directory", func(t *testing.T, dir, outside string) {
			if err := os.MkdirAll(filepath.Join(dir, File, "x"), 0o777); err != nil {
				t.Fatal(err)
			}
		}},
		{"junk and a torn line", func(t *testing.T, dir, outside string) {
			if err := os.WriteFile(filepath.Join(dir, File), []byte("garbage\n{\"seq\":\x00\n{\"seq\":99,\"detec"), 0o666); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, other := t.TempDir(), t.TempDir()
			outside := filepath.Join(other, "token")
			if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
				t.Fatal(err)
			}
			tt.plant(t, dir, outside)
			for i := 1; i <= 2; i++ {
				if err := Append(dir, rec(i, "report what you have")); err != nil {
					t.Fatalf("append %d: %v", i, err)
				}
			}
			if b, _ := os.ReadFile(outside); string(b) != "secret" {
				t.Fatalf("the file outside the volume was written: %q", b)
			}
			fi, err := os.Lstat(filepath.Join(dir, File))
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 && !strings.Contains(tt.name, "junk") {
				t.Fatalf("nudges file %v %v", fi, err)
			}
			b, _ := os.ReadFile(filepath.Join(dir, File))
			got := Parse(b)
			if len(got) < 2 || got[len(got)-2].Seq != 1 || got[len(got)-1].Seq != 2 {
				t.Fatalf("records %+v in %q", got, b)
			}
		})
	}
}

// An over-long message is cut, on a rune boundary, and still parses.
func TestEncodeBounds(t *testing.T) {
	long := strings.Repeat("é", MaxMessage)
	got := Parse(Encode(Record{Seq: 1, Detector: "silentRun", Message: long}))
	if len(got) != 1 || len(got[0].Message) > MaxMessage {
		t.Fatalf("%d records", len(got))
	}
}

func TestParseSkipsJunk(t *testing.T) {
	in := string(Encode(rec(1, "a"))) + "not json\n" + `{"seq":0,"detector":"x","message":"m"}` + "\n" +
		`{"seq":2,"detector":"","message":"m"}` + "\n" + strings.Repeat("x", MaxLine+1) + "\n" + string(Encode(rec(3, "c")))
	got := Parse([]byte(in))
	if len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 3 {
		t.Fatalf("%+v", got)
	}
}

// The hook lands at bin/turnwatch-hook, executable, even when the agent
// planted a symlink where the bin directory goes.
func TestInstallHook(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	src := filepath.Join(other, "hook")
	if err := os.WriteFile(src, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(dir, "bin")); err != nil {
		t.Fatal(err)
	}
	if err := InstallHook(dir, src); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(dir, HookPath))
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o755 {
		t.Fatalf("%v %v", fi, err)
	}
	if ents, _ := os.ReadDir(other); len(ents) != 1 {
		t.Fatalf("wrote into the symlink's target: %v", ents)
	}
	if err := InstallHook(dir, src); err != nil { // again, over the first copy (a restarted sidecar)
		t.Fatal(err)
	}
}
