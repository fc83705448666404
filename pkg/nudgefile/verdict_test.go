package nudgefile

import "testing"

func TestCallKeyCanonical(t *testing.T) {
	a := CallKey("run_shell_command", []byte(`{"command":"cat /etc/os-release","dir":"."}`), 1)
	b := CallKey("run_shell_command", []byte("{ \"dir\": \".\",\n \"command\": \"cat /etc/os-release\" }"), 1)
	if a != b {
		t.Errorf("same arguments, other spacing and order: %q != %q", a, b)
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
