package monitor

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
		var s scanner
		s.reset([]byte(in))
		got := s.skip() && s.end()
		want := json.Valid([]byte(in))
		if got != want {
			t.Errorf("%q: skip=%v, json.Valid=%v", in, got, want)
		}
	}
}

func TestScannerObject(t *testing.T) {
	var s scanner
	s.reset([]byte(`{"type":"x","n":12,"b":true,"o":{"k":[1,"]"]},"s":null}`))
	s.enter()
	var o obj
	got := map[string]string{}
	for {
		k, ok := s.key(&o)
		if !ok {
			break
		}
		v, _ := s.value()
		got[string(k)] = string(v)
	}
	if !s.end() || got["type"] != `"x"` || got["o"] != `{"k":[1,"]"]}` || got["s"] != "null" || len(got) != 5 {
		t.Fatalf("%v bad=%v", got, s.bad)
	}
	for _, in := range []string{`{"a":1,}`, `{,"a":1}`, `{"a" 1}`, `{"a":1 "b":2}`} {
		s.reset([]byte(in))
		s.enter()
		o = obj{}
		for {
			if _, ok := s.key(&o); !ok {
				break
			}
			s.skip()
		}
		if !s.bad {
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
		var s scanner
		s.reset([]byte(tt.in))
		s.enter()
		var o obj
		got := ""
		if tt.into {
			for s.into(&o, tt.name) {
				var m obj
				for s.find(&m, "v") {
					v, _ := s.value()
					got += string(v) + "|"
				}
			}
		} else {
			for s.find(&o, tt.name) {
				v, _ := s.value()
				got += string(v) + "|"
			}
		}
		if bad := !s.end(); got != tt.want || bad != tt.bad {
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
		var s scanner
		s.reset([]byte(tt.in))
		got := s.object()
		if got != tt.entered || len(s.b)-s.i != tt.rest || s.bad != tt.bad {
			t.Errorf("%q: entered=%v rest=%d bad=%v, want %v %d %v", tt.in, got, len(s.b)-s.i, s.bad, tt.entered, tt.rest, tt.bad)
		}
	}
}

// Lines that are not whole JSON objects of a known shape are unparsed:
// truncated lines, binary bytes, unknown event types; blank lines are not
// counted; other formats' lines are not this format's.
func TestUnparsedLines(t *testing.T) {
	tests := []struct {
		format string
		line   string
		want   int
	}{
		{FormatPi, `{"type":"agent_start"}`, 0},
		{FormatPi, `{"type":"agent_start"`, 1},
		{FormatPi, `{"type":"message_update","message":{"role":"assistant","content":[{"type":"text","text":"ab`, 1},
		{FormatPi, `{"type":"agent_start"} trailing`, 1},
		{FormatPi, `{"type":"some_future_event"}`, 1},
		{FormatPi, "\x00\x01\xff\xfe", 1},
		{FormatPi, `[1,2,3]`, 1},
		{FormatPi, `   `, 0},
		{FormatPi, `{"session":"x","type":"agent_start"}`, 0}, // type not first
		{FormatPi, `{"type":"item.completed","item":{"id":"1","type":"agent_message","text":"x"}}`, 1},
		{FormatCodex, `{"type":"item.completed","item":{"id":"1","type":"agent_message","text":"x"}}`, 0},
		{FormatAuto, `not json at all`, 1},
		{FormatAuto, `{"type":"error","message":"x"}`, 1}, // decides no format
	}
	for _, tt := range tests {
		r := replayLines(t, tt.format, DefaultGuards(), []string{tt.line})
		if r.Unparsed != tt.want || r.Lines != 1 {
			t.Errorf("%s %q: unparsed %d lines %d, want %d 1", tt.format, tt.line, r.Unparsed, r.Lines, tt.want)
		}
	}
}
