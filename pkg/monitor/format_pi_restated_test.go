package monitor

import (
	"strings"
	"testing"
)

// TestPiRestatedPartial: assistantMessageEvent.partial is stepped over as
// a whole when it restates message byte for byte, and read with the full
// grammar otherwise; either way a line is parsed exactly when it is one
// valid object (or holds a cost only readMoney accepts, in message alone).
func TestPiRestatedPartial(t *testing.T) {
	msg := `{"role":"assistant","content":[{"type":"text","text":"a \"b\" \\ c"}],"usage":{"cost":{"total":0.5}},"stopReason":"stop"}`
	line := func(m, partial, tail string) string {
		return `{"type":"message_update","message":` + m +
			`,"assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"c","partial":` + partial + `}` + tail + `}`
	}
	nan := strings.Replace(msg, "0.5", "NaN", 1)
	for _, c := range []struct {
		name   string
		line   string
		parsed bool
	}{
		{"the same bytes", line(msg, msg, ""), true},
		{"the same bytes, then more members", line(msg, msg, `,"x":[1,{"y":null}]`), true},
		{"a different partial", line(msg, strings.Replace(msg, `"stop"`, `"toolUse"`, 1), ""), true},
		{"a partial in another spelling", line(msg, strings.ReplaceAll(msg, ":", " : "), ""), true},
		{"the same bytes, then garbage", line(msg, msg+`x`, ""), false},
		{"the same bytes, cut", line(msg, msg[:len(msg)-1], "")[:len(line(msg, msg[:len(msg)-1], ""))-2], false},
		{"a prefix of message, wrong after", line(msg, msg[:len(msg)-1]+`,}`, ""), false},
		{"a partial with a missing colon", line(msg, strings.Replace(msg, `"stopReason":`, `"stopReason"`, 1), ""), false},
		{"NaN in message and its restatement", line(nan, nan, ""), false},
		{"NaN in message alone", line(nan, msg, ""), true},
		{"partial before message", `{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"c","partial":` + msg + `},"message":` + msg + `}`, true},
		{"partial before message, garbled", `{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"c","partial":` + msg[:20] + `},"message":` + msg + `}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := replayLines(t, FormatPi, DefaultGuards(), []string{c.line})
			if got := r.Unparsed == 0; got != c.parsed {
				t.Fatalf("parsed %v, want %v: %s", got, c.parsed, c.line)
			}
		})
	}
}
