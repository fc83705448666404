package monitor

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"
)

// TestPiMessageInOrderAgrees: reading a message with the in-order fast
// paths (readPiMessageInOrder, readPiUsageInOrder; the member-by-member
// readers where they give up) gives what the member-by-member readers
// alone give: the same fields, position, failure
// and escape flag, on pi's messages and on mutations of them (members
// moved, spaces, escapes, nulls, other value types, bytes changed).
func TestPiMessageInOrderAgrees(t *testing.T) {
	base := []string{
		`{"role":"assistant","content":[{"type":"text","text":"a \"b\" \\ c"}],"api":"openai-responses","provider":"openai","model":"gpt-5.1-codex","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.0023140000000000003}},"stopReason":"toolUse","timestamp":1767401001200}`,
		`{"role":"assistant","content":[],"api":"x","provider":"y","model":"z","usage":{"cost":{"total":NaN}},"stopReason":"error","errorMessage":"Rate limit exceeded","timestamp":1}`,
		`{"role":"user","content":"hi","api":null,"provider":1,"model":{},"usage":null,"stopReason":null,"timestamp":"t"}`,
		`{"role":"assistant","content":[],"api":"x","provider":"y","model":"z","usage":{},"stopReason":"st\u006fp","timestamp":1}`,
		`{"role":"assist\u0061nt","content":[],"api":"x","provider":"y","model":"z","usage":{},"stopReason":"stop","timestamp":1}`,
		`{"role":"assistant","content":[],"api":"x","provider":"y","model":"z","usage":{},"stopReason":"stop","errorMessage":null,"timestamp":1,"extra":true}`,
		`{"role":"assistant","content":[],"api":"x","provider":"y","model":"z","usage":{},"stopReason":"stop","timestamp":1,"role":"user"}`,
		`{"content":[],"role":"assistant","api":"x","provider":"y","model":"z","usage":{},"stopReason":"stop","timestamp":1}`,
		`{"role":"assistant","content":[],"api":"x","provider":"y","model":"z","usage":{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"totalTokens":10,"cost":{"input":0.1,"output":2e-3,"cacheRead":0,"cacheWrite":0,"total":-1}},"stopReason":"stop","timestamp":1}`,
		`{"role":"assistant","content":[],"api":"x","provider":"y","model":"z","usage":{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"totalTokens":10,"cost":{"input":0.1,"output":2e-3,"cacheRead":0,"cacheWrite":0,"total":1.5,"total":2}},"stopReason":"stop","timestamp":1}`,
	}
	r := rand.New(rand.NewPCG(15, 16))
	alphabet := []string{`"`, `\`, `{`, `}`, `[`, `]`, `,`, `:`, ` `, `0`, `-`, `n`, `u`, `x`}
	check := func(msg string) {
		line := []byte(msg + `,"assistantMessageEvent":{"type":"text_delta"}}`)
		var a, b jsonscan.Scanner
		var ma, mb piMessage
		a.Reset(line)
		b.Reset(line)
		readPiMessage(&a, &ma, nil)
		piInOrder = false
		readPiMessage(&b, &mb, nil)
		piInOrder = true
		// A failed line is unparsed whatever was read: only its escape
		// flag still counts (it is read again from a decoded copy).
		if a.Bad != b.Bad || a.Esc != b.Esc || !a.Bad && (a.Pos != b.Pos || !reflect.DeepEqual(ma, mb)) {
			t.Fatalf("%s:\nin order: %+v at %d bad %v esc %v\nmembers:  %+v at %d bad %v esc %v", msg, ma, a.Pos, a.Bad, a.Esc, mb, b.Pos, b.Bad, b.Esc)
		}
	}
	for _, m := range base {
		check(m)
		check(strings.ReplaceAll(m, ",", " , "))
		for n := 0; n < 3000; n++ {
			check(mutate(r, m, alphabet))
		}
	}
}

// TestPiAMEInOrderAgrees: an assistantMessageEvent read in place
// (readPiAMEInOrder, with the message's grown text as a hint or without)
// reads as member by member, on pi's events and mutations of them.
func TestPiAMEInOrderAgrees(t *testing.T) {
	msg := `{"role":"assistant","content":[],"api":"x","provider":"y","model":"z","usage":{},"stopReason":"stop","timestamp":1}`
	base := []struct{ ame, grown string }{
		{`{"type":"text_delta","contentIndex":0,"delta":"a \"b\" \\ c","partial":` + msg + `}`, `a \"b\" \\ c`},
		{`{"type":"thinking_delta","contentIndex":12,"delta":"hmm\\","partial":` + msg + `}`, `hmm\\`},
		{`{"type":"text_delta","contentIndex":0,"delta":"","partial":` + msg + `}`, ``},
		{`{"type":"toolcall_end","contentIndex":1,"toolCall":{"type":"toolCall","id":"t","name":"bash","arguments":{}},"partial":` + msg + `}`, ``},
		{`{"type":"text_delta","contentIndex":0,"delta":"x","partial":{"role":"user"},"extra":1}`, `x`},
		{`{"type":"text_d\u0065lta","contentIndex":0,"delta":"x","partial":null}`, `x`},
	}
	r := rand.New(rand.NewPCG(17, 18))
	alphabet := []string{`"`, `\`, `{`, `}`, `[`, `]`, `,`, `:`, ` `, `0`, `-`, `n`, `u`, `x`}
	check := func(ame, grown string) {
		line := []byte(`{"type":"message_update","message":` + msg + `,"assistantMessageEvent":` + ame + `}`)
		var sa, sb jsonscan.Scanner
		var ma, mb piMessage
		var a, b piAME
		sa.Reset(line)
		sb.Reset(line)
		sa.Pos, sb.Pos = len(`{"type":"message_update","message":`), len(`{"type":"message_update","message":`)
		readPiMessage(&sa, &ma, nil)
		readPiMessage(&sb, &mb, nil)
		sa.Pos += len(`,"assistantMessageEvent":`)
		sb.Pos += len(`,"assistantMessageEvent":`)
		// grown as the message reader hands it: bytes of this line.
		var g []byte
		if k := bytes.Index(line[sa.Pos:], []byte(grown)); grown != "" && k >= 0 {
			g = line[sa.Pos+k : sa.Pos+k+len(grown)]
		}
		readPiAME(&sa, &a, ma.raw, g)
		piInOrder = false
		readPiAME(&sb, &b, mb.raw, nil)
		piInOrder = true
		if sa.Bad != sb.Bad || sa.Esc != sb.Esc || !sa.Bad && (sa.Pos != sb.Pos || !reflect.DeepEqual(a, b)) {
			t.Fatalf("%s:\nin order: %+v at %d bad %v esc %v\nmembers:  %+v at %d bad %v esc %v", ame, a, sa.Pos, sa.Bad, sa.Esc, b, sb.Pos, sb.Bad, sb.Esc)
		}
	}
	for _, c := range base {
		check(c.ame, c.grown)
		check(strings.ReplaceAll(c.ame, ",", " , "), c.grown)
		for n := 0; n < 3000; n++ {
			check(mutate(r, c.ame, alphabet), c.grown)
		}
	}
}

// mutate changes one or two bytes of s: one goes, one from alphabet comes
// in, or one is replaced by one of alphabet's.
func mutate(r *rand.Rand, s string, alphabet []string) string {
	mut := []byte(s)
	for k := 0; k < 1+r.IntN(2); k++ {
		p := r.IntN(len(mut))
		switch r.IntN(3) {
		case 0:
			mut = append(mut[:p], mut[p+1:]...)
		case 1:
			mut = append(mut[:p], append([]byte(alphabet[r.IntN(len(alphabet))]), mut[p:]...)...)
		default:
			mut[p] = alphabet[r.IntN(len(alphabet))][0]
		}
	}
	return string(mut)
}
