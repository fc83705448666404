package jsonscan

import (
	"encoding/json"
	"testing"
)

// The scanner's skip agrees with encoding/json on what a whole value is.
func TestScannerSkip(t *testing.T) {
	tests := []string{
		`{}`, `[]`, `{"a":[1,2,{"b":"c\"d\\"}]}`, `"x"`, `"\\\\"`, `-1.5e3`, `true`, `null`,
		`{"a":"\u00e9"}`, ` {"a" : [ ] } `,
		`1-2`, `01`, `1.`, `-`, `1e`, `.5`, `[1,]`, `{"a":1,}`, `{,}`, `[,1]`, `{"a" 1}`, `{1:2}`,
		`{`, `{"a":}`, `{"a":1`, `[1,2`, `"abc`, `"ab\"`, `{"a":[}`, `[1}`, `}`, `tru`, `nul`, ``, `{"a":1}}`,
	}
	for _, in := range tests {
		var s Scanner
		s.Reset([]byte(in))
		got := s.Skip() && s.End()
		want := json.Valid([]byte(in))
		if got != want {
			t.Errorf("%q: skip=%v, json.Valid=%v", in, got, want)
		}
	}
}

func TestScannerObject(t *testing.T) {
	var s Scanner
	s.Reset([]byte(`{"type":"x","n":12,"b":true,"o":{"k":[1,"]"]},"s":null}`))
	s.Enter()
	var o Obj
	got := map[string]string{}
	for {
		k, ok := s.Key(&o)
		if !ok {
			break
		}
		v, _ := s.Value()
		got[string(k)] = string(v)
	}
	if !s.End() || got["type"] != `"x"` || got["o"] != `{"k":[1,"]"]}` || got["s"] != "null" || len(got) != 5 {
		t.Fatalf("%v bad=%v", got, s.Bad)
	}
	for _, in := range []string{`{"a":1,}`, `{,"a":1}`, `{"a" 1}`, `{"a":1 "b":2}`} {
		s.Reset([]byte(in))
		s.Enter()
		o = Obj{}
		for {
			if _, ok := s.Key(&o); !ok {
				break
			}
			s.Skip()
		}
		if !s.Bad {
			t.Errorf("%s: want a syntax error", in)
		}
	}
}

// find visits every member of a name, into every one whose value is an
// object; both leave the scanner ready for the rest of the line.
func TestScannerFindInto(t *testing.T) {
	tests := []struct {
		in, name string
		into     bool
		want     string // the values visited, each as read by value (find) or its "v" member (into)
		bad      bool
	}{
		{`{"a":1,"m":2,"b":{"m":3},"m":"x"}`, "m", false, `2|"x"|`, false},
		{`{"a":1}`, "m", false, ``, false},
		{`{}`, "m", false, ``, false},
		{`{"m":1,}`, "m", false, `1|`, true},
		{`{"m":null,"m":{"v":1},"x":[{"m":{}}],"m":{"w":2,"v":"y"},"m":[]}`, "m", true, `1|"y"|`, false},
		{`{"m":null}`, "m", true, ``, false},
		{`{"m":{"v":1}`, "m", true, `1|`, true},
		{`{"m":nul}`, "m", true, ``, true},
	}
	for _, tt := range tests {
		var s Scanner
		s.Reset([]byte(tt.in))
		s.Enter()
		var o Obj
		got := ""
		if tt.into {
			for s.Into(&o, tt.name) {
				var m Obj
				for s.Find(&m, "v") {
					v, _ := s.Value()
					got += string(v) + "|"
				}
			}
		} else {
			for s.Find(&o, tt.name) {
				v, _ := s.Value()
				got += string(v) + "|"
			}
		}
		if bad := !s.End(); got != tt.want || bad != tt.bad {
			t.Errorf("%s: visited %q bad=%v, want %q bad=%v", tt.in, got, bad, tt.want, tt.bad)
		}
	}
}

// object enters an object and steps over anything else.
func TestScannerObjectOrSkip(t *testing.T) {
	tests := []struct {
		in      string
		entered bool
		rest    int // bytes left after the call
		bad     bool
	}{
		{`{"a":1}`, true, 6, false},
		{` null,`, false, 1, false},
		{`[1,{}] `, false, 1, false},
		{`"{"`, false, 0, false},
		{`nul`, false, 3, true},
		{``, false, 0, true},
	}
	for _, tt := range tests {
		var s Scanner
		s.Reset([]byte(tt.in))
		got := s.Object()
		if got != tt.entered || len(s.Buf)-s.Pos != tt.rest || s.Bad != tt.bad {
			t.Errorf("%q: entered=%v rest=%d bad=%v, want %v %d %v", tt.in, got, len(s.Buf)-s.Pos, s.Bad, tt.entered, tt.rest, tt.bad)
		}
	}
}
