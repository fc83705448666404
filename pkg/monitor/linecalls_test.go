package monitor

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// LineCalls sees, on every line of every real stream, the calls Inspect
// lists: the same ids, names and completeness, and the digest of the same
// arguments.
func TestLineCallsAsInspect(t *testing.T) {
	streams, _ := filepath.Glob(filepath.Join("testdata", "real", "*", "*.jsonl"))
	if len(streams) == 0 {
		t.Fatal("no real streams")
	}
	for _, path := range streams {
		format := filepath.Base(filepath.Dir(path))
		eng, err := New(Options{Format: format})
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		calls := 0
		for line := 1; sc.Scan(); line++ {
			eng.Feed(sc.Bytes(), time.Time{})
			want := eng.Inspect().Calls
			var got []LineCall
			eng.LineCalls(func(c LineCallRef) {
				id, _ := c.ID(1 << 20)
				name, _ := c.Name(1 << 20)
				args, sig := c.Digest()
				if w := len(got); w < len(want) && (args != ArgsDigest([]byte(want[w].Args)) || sig != callSig([]byte(want[w].Name), []byte(want[w].Args)) ||
					c.IDSum() != idHash([]byte(want[w].ID)) || c.HasID() != (want[w].ID != "")) {
					t.Errorf("%s:%d: call %d: digests differ from Inspect's %+v", path, line, w, want[w])
				}
				got = append(got, LineCall{ID: id, Name: name, Complete: c.Complete()})
			})
			if len(got) != len(want) {
				t.Fatalf("%s:%d: %d calls, Inspect %d", path, line, len(got), len(want))
			}
			for i := range got {
				if got[i].ID != want[i].ID || got[i].Name != want[i].Name || got[i].Complete != want[i].Complete {
					t.Errorf("%s:%d: call %+v, Inspect %+v", path, line, got[i], want[i])
				}
			}
			calls += len(got)
		}
		f.Close()
		if strings.HasSuffix(path, "identicalLoop.jsonl") && calls == 0 {
			t.Errorf("%s: no calls seen", path)
		}
	}
}

// A call's id and name come decoded up to a bound, none past it; reading a
// line's calls and digesting 12 MiB of arguments allocates nothing.
func TestLineCallsBoundedAndFree(t *testing.T) {
	eng, err := New(Options{Format: FormatClaude})
	if err != nil {
		t.Fatal(err)
	}
	content := strings.Repeat(`if a < b {\n\tx(\"\u00e9\")\n}\n`, 12<<20/30)
	line := []byte(`{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"toolu_\u0031` + strings.Repeat("x", 300) +
		`","name":"Wr\u0069te","input":{"file_path":"/w/a","content":"` + content + `"}}]},"session_id":"s"}`)
	eng.Feed(line, time.Time{})
	var n int
	var args uint64
	allocs := testing.AllocsPerRun(3, func() {
		eng.LineCalls(func(c LineCallRef) {
			n++
			args, _ = c.Digest()
		})
	})
	if n == 0 || allocs != 0 {
		t.Fatalf("%d calls, %v allocations per read", n, allocs)
	}
	if want := ArgsDigest([]byte(`{"content":"` + content + `","file_path":"/w/a"}`)); args != want {
		t.Errorf("digest %x, want the reordered arguments' %x", args, want)
	}
	eng.LineCalls(func(c LineCallRef) {
		if id, ok := c.ID(256); ok || id != "" {
			t.Errorf("an id of 307 bytes came back: %q", id)
		}
		if id, ok := c.ID(512); !ok || id != "toolu_1"+strings.Repeat("x", 300) {
			t.Errorf("id %q %v", id, ok)
		}
		if name, ok := c.Name(256); !ok || name != "Write" {
			t.Errorf("name %q %v", name, ok)
		}
	})
}
