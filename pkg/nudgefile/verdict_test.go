package nudgefile

import (
	"fmt"
	"strings"
	"testing"

	"turnwatch.dev/turnwatch/pkg/monitor"
)

func TestCallKeyCanonical(t *testing.T) {
	a := CallKey("run_shell_command", []byte(`{"command":"cat /etc/os-release","dir":"."}`), 1)
	for _, same := range []string{
		"{ \"dir\": \".\",\n \"command\": \"cat /etc/os-release\" }", // spacing and order
		`{"command":"cat \/etc\/os-release","dir":"\u002e"}`,         // escapes
	} {
		if b := CallKey("run_shell_command", []byte(same), 1); a != b {
			t.Errorf("same arguments %s: %q != %q", same, a, b)
		}
	}
	if a != "run_shell_command "+fmt.Sprintf("%016x", monitor.ArgsDigest([]byte(`{"dir":".","command":"cat /etc/os-release"}`)))+" 1" {
		t.Errorf("key %q: want the tool, the arguments' digest, the count", a)
	}
	if x, y := CallKey("t", []byte(`{"n":1.0}`), 1), CallKey("t", []byte(`{"n":1}`), 1); x != y {
		t.Errorf("number spellings: %q != %q", x, y)
	}
	for _, other := range []string{
		CallKey("run_shell_command", []byte(`{"command":"cat /etc/os-release","dir":"."}`), 2),
		CallKey("read_file", []byte(`{"command":"cat /etc/os-release","dir":"."}`), 1),
		CallKey("run_shell_command", []byte(`{"command":"cat /etc/passwd","dir":"."}`), 1),
	} {
		if other == a {
			t.Errorf("another call has the same key %q", a)
		}
	}
}

func TestFindVerdict(t *testing.T) {
	file := string(EncodeVerdict(Verdict{Call: "c1", Key: "k1"})) + "junk\n{\"call\":\n" +
		string(EncodeVerdict(Verdict{Call: "c2", Key: "k2", Refuse: true, Detector: "identicalCalls", Message: "repeated"}))
	stopped := file + string(EncodeVerdict(Verdict{Call: CallAll, Refuse: true, Detector: "stall", Message: "stalled"}))
	tests := []struct {
		name, data, call, key string
		found, refuse         bool
		detector              string
	}{
		{"judged ok", file, "c1", "", true, false, ""},
		{"refused", file, "c2", "", true, true, "identicalCalls"},
		{"by key, no id", file, "", "k2", true, true, "identicalCalls"},
		{"not judged yet", file, "c3", "k3", false, false, ""},
		{"an id is not matched by key", file, "c9", "k1", false, false, ""},
		{"after a trip, any other call", stopped, "c3", "", true, true, "stall"},
		{"after a trip, a call judged ok stays ok", stopped, "c1", "", true, false, ""},
		{"empty", "", "c1", "k1", false, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, ok := FindVerdict([]byte(tt.data), tt.call, tt.key)
			if ok != tt.found || v.Refuse != tt.refuse || v.Detector != tt.detector {
				t.Errorf("FindVerdict = %+v %v", v, ok)
			}
		})
	}
}

// The key of a call of many megabytes is built without copying its
// arguments: a few small allocations, whatever their size.
func TestCallKeyAllocates(t *testing.T) {
	args := []byte(`{"file_path":"/w/a","content":"` + strings.Repeat(`<p>caf\u00e9 &amp; \"x\"</p>\n`, 12<<20/32) + `"}`)
	var key string
	allocs := testing.AllocsPerRun(2, func() { key = CallKey("Write", args, 1) })
	if allocs > 8 || !strings.HasPrefix(key, "Write ") {
		t.Errorf("key %q: %v allocations", key, allocs)
	}
}
