package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
)

// obj is a JSON object that keeps its keys in the order written, so the
// generated events read like the real CLIs' ("type" first).
type obj []kv

type kv struct {
	k string
	v any
}

// MarshalJSON writes the keys in order, without HTML escaping.
func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := encode(f.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := encode(f.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// raw is JSON that is written as is (tool arguments in canonical form).
type raw string

// MarshalJSON returns the JSON text.
func (r raw) MarshalJSON() ([]byte, error) { return []byte(r), nil }

func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// base is the wall-clock time every generated stream starts at.
var base = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// emitter collects the lines of one stream, each with the
// `kubectl logs --timestamps` prefix of the moment it was written.
type emitter struct {
	t     time.Time
	lines []string
	seed  uint32
	n     int
}

func newEmitter(format, scenario string) *emitter {
	h := fnv.New32a()
	h.Write([]byte(format + "/" + scenario))
	return &emitter{t: base, seed: h.Sum32()}
}

func (e *emitter) after(d time.Duration) { e.t = e.t.Add(d) }

func (e *emitter) emit(v obj) {
	b, err := encode(v)
	if err != nil {
		panic(err) // only our own literals get here
	}
	e.lines = append(e.lines, e.t.Format(time.RFC3339Nano)+" "+string(b))
}

// id returns a deterministic identifier with the given prefix.
func (e *emitter) id(prefix string) string {
	e.n++
	return fmt.Sprintf("%s%08x%04d", prefix, e.seed, e.n)
}

// uuid returns a deterministic UUID-shaped identifier.
func (e *emitter) uuid() string {
	e.n++
	return fmt.Sprintf("%08x-0000-4000-8000-%012d", e.seed, e.n)
}

func (e *emitter) ms() int64     { return e.t.UnixMilli() }
func (e *emitter) iso() string   { return e.t.Format("2006-01-02T15:04:05.000Z") }
func (e *emitter) text() string  { return strings.Join(e.lines, "\n") + "\n" }
func sumCost(s Script) string    { return addCosts(s.Msgs, len(s.Msgs)) }
func tokensIn(s Script) (n int)  { return sumTokens(s, func(m Msg) int { return m.In }) }
func tokensOut(s Script) (n int) { return sumTokens(s, func(m Msg) int { return m.Out }) }

func sumTokens(s Script, f func(Msg) int) (n int) {
	for _, m := range s.Msgs {
		n += f(m)
	}
	return n
}

// addCosts adds the first n messages' decimal costs exactly (in 1e-4 USD).
func addCosts(msgs []Msg, n int) string {
	var total int64
	for _, m := range msgs[:n] {
		total += tenThousandths(m.CostUSD)
	}
	return fmtCost(total)
}

func tenThousandths(s string) int64 {
	whole, frac, _ := strings.Cut(s, ".")
	frac = (frac + "0000")[:4]
	w, _ := strconv.ParseInt(whole, 10, 64)
	f, _ := strconv.ParseInt(frac, 10, 64)
	return w*10000 + f
}

func fmtCost(t int64) string { return fmt.Sprintf("%d.%04d", t/10000, t%10000) }

// costNum renders a decimal cost string as a JSON number.
func costNum(s string) raw {
	t := strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if t == "" {
		t = "0"
	}
	return raw(t)
}

// tool names and canonical JSON arguments, per format.
type toolNames struct {
	shell, read, grep, edit, write string
	// argument keys
	command, path, pattern, oldText, newText, content string
}

func (t toolNames) call(c Call) (string, raw) {
	switch c.Kind {
	case Shell:
		return t.shell, args(kv{t.command, c.Command})
	case Read:
		return t.read, args(kv{t.path, c.Path})
	case Grep:
		return t.grep, args(kv{t.pattern, c.Pattern}, kv{"path", c.Path})
	case Edit:
		return t.edit, args(kv{t.path, c.Path}, kv{t.oldText, c.Old}, kv{t.newText, c.New})
	default:
		return t.write, args(kv{t.path, c.Path}, kv{t.content, c.New})
	}
}

func args(fields ...kv) raw {
	b, _ := encode(obj(fields))
	return raw(b)
}

// shellLine is the command a shell-only agent (codex) runs for a call.
func shellLine(c Call) string {
	switch c.Kind {
	case Shell:
		return "bash -lc '" + c.Command + "'"
	case Read:
		return "bash -lc 'cat " + c.Path + "'"
	case Grep:
		return "bash -lc 'grep -rn \"" + c.Pattern + "\" " + c.Path + "'"
	default:
		return ""
	}
}

// deltas calls f for each thinking then text delta of m, advancing the clock
// by m.Every before each and inserting m's mid-message pause.
func deltas(e *emitter, m Msg, f func(thinking bool, i int, d string)) {
	n := 0
	step := func(thinking bool, i int, d string) {
		if n > 0 {
			e.after(m.Every)
		}
		if m.PauseAfter > 0 && n == m.PauseAfter {
			e.after(m.Pause)
		}
		n++
		f(thinking, i, d)
	}
	for i, d := range m.Thinking {
		step(true, i, d)
	}
	for i, d := range m.Text {
		step(false, i, d)
	}
}

// genTime is how long the model generates m's deltas, pause included: what
// a format without deltas shows as one gap before the message's text.
func genTime(m Msg) time.Duration {
	n := len(m.Thinking) + len(m.Text)
	if n == 0 {
		return 0
	}
	d := time.Duration(n-1) * m.Every
	if m.PauseAfter > 0 && m.PauseAfter < n {
		d += m.Pause
	}
	return d
}

// splitCost splits a message's cost into an input and an output part
// (output tokens priced five times input), in 1e-4 USD.
func splitCost(m Msg) (in, out string) {
	t := tenThousandths(m.CostUSD)
	w := int64(m.In) + 5*int64(m.Out)
	if w == 0 {
		return "0", fmtCost(t)
	}
	i := t * int64(m.In) / w
	return fmtCost(i), fmtCost(t - i)
}

// lastText is the text of the last message that speaks.
func lastText(s Script) string {
	for i := len(s.Msgs) - 1; i >= 0; i-- {
		if s.Msgs[i].speaks() {
			return s.Msgs[i].text()
		}
	}
	return ""
}

// splitGen splits genTime(m) into the time spent on the thinking deltas and
// the time spent on the text deltas, the pause going where it falls.
func splitGen(m Msg) (thinking, text time.Duration) {
	if len(m.Thinking) > 0 {
		thinking = time.Duration(len(m.Thinking)-1) * m.Every
		if m.PauseAfter > 0 && m.PauseAfter < len(m.Thinking) {
			thinking += m.Pause
		}
	}
	return thinking, genTime(m) - thinking
}
