package nudgefile

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// The ready marker is written whatever the agent planted at its name, and
// only a regular file counts as ready.
func TestReady(t *testing.T) {
	tests := []struct {
		name  string
		plant func(t *testing.T, dir, outside string)
	}{
		{"nothing", func(t *testing.T, dir, outside string) {}},
		{"a symlink out of the volume", func(t *testing.T, dir, outside string) {
			if err := os.Symlink(outside, filepath.Join(dir, ReadyFile)); err != nil {
				t.Fatal(err)
			}
		}},
		{"a fifo", func(t *testing.T, dir, outside string) {
			if err := syscall.Mkfifo(filepath.Join(dir, ReadyFile), 0o666); err != nil {
				t.Fatal(err)
			}
		}},
		// A restarted sidecar finds what the agent planted meanwhile.
		{"a directory", func(t *testing.T, dir, outside string) {
			if err := os.Mkdir(filepath.Join(dir, ReadyFile), 0o777); err != nil {
				t.Fatal(err)
			}
		}},
		{"a directory with files in it", func(t *testing.T, dir, outside string) {
			if err := os.MkdirAll(filepath.Join(dir, ReadyFile, "sub"), 0o777); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, ReadyFile, "sub", "f"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"a symlink to a file in the volume", func(t *testing.T, dir, outside string) {
			if err := os.WriteFile(filepath.Join(dir, "victim"), []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("victim", filepath.Join(dir, ReadyFile)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, outside := t.TempDir(), filepath.Join(t.TempDir(), "victim")
			if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
				t.Fatal(err)
			}
			tt.plant(t, dir, outside)
			if err := Ready(dir); err == nil {
				t.Errorf("ready before the marker was written")
			}
			if err := WriteReady(dir); err != nil {
				t.Fatal(err)
			}
			if err := Ready(dir); err != nil {
				t.Errorf("not ready after the marker was written: %v", err)
			}
			if b, _ := os.ReadFile(outside); string(b) != "keep" {
				t.Errorf("the file outside the volume now holds %q", b)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "victim")); err == nil && string(b) != "keep" {
				t.Errorf("the file in the volume now holds %q", b)
			}
			if err := WriteReady(dir); err != nil { // and again: a restart
				t.Fatal(err)
			}
		})
	}
	if err := Ready(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("a missing volume is ready")
	}
}

func TestParseAcksRefused(t *testing.T) {
	data := `{"seq":0,"cli":"claude"}
{"seq":1}
{"seq":0,"refused":"toolu_1"}
junk
{"seq":0,"refused":"?"}
`
	a := ParseAcks([]byte(data))
	if !a.Ran || !a.Delivered(1) || !slices.Equal(a.Refused, []string{"toolu_1", "?"}) {
		t.Errorf("read %+v", a)
	}
	if a := ParseAcks([]byte(`{"seq":0}`)); len(a.Refused) != 0 {
		t.Errorf("refused %v without a refusal", a.Refused)
	}
}
