package monitor

import (
	"encoding/json"

	"turnwatch.dev/turnwatch/pkg/agents"
	"turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"
)

// A parser reads one line of its format into c.ev. The scanner stands
// inside the top-level object, after the "type" member (or at its start
// when "type" was not the first key; parsers then skip "type" like any
// other unknown key). A parser consumes the rest of the object and returns
// false for a line of no known shape, which the engine counts as unparsed.
type parser func(c *parseContext, s *jsonscan.Scanner, o *jsonscan.Obj, typ []byte) bool

// parseContext is all a parser sees of the engine: the little of the
// fold's state that changes how a line reads, the format's own memo, and
// the event the line becomes. The fold (engine.go) fills it before each
// line; a parser never reaches the fold or the detectors.
type parseContext struct {
	// turnOpen: no final result has ended the turn yet (Engine.live); an
	// opencode step_start after one reopens the turn.
	turnOpen bool
	// msgOpen: a model message is open (pi's turn_end ends it only if no
	// message_end did).
	msgOpen bool
	// pi is what the last pi message left for the next line's
	// (format_pi_memo.go): the one state a parser keeps between lines.
	pi *piMemo
	// ev is the sink: the event this line becomes, applied by the fold.
	ev *event
}

// format is one stream format the engine reads, a CLI's of agents.CLIs:
// its parser, and its sniff, beside the parser, which recognises the
// format's own lines for auto by event types that only it uses, and by
// keys where two formats share a type (tool_use: opencode has "part",
// gemini "tool_name"; result: claude has "subtype", gemini "status"). A
// line exactly one format claims decides; one that two claim (both keys)
// decides nothing.
type format struct {
	name  string
	parse parser
	sniff func(typ string, line []byte) bool
}

// formats is the table of the formats, in the order auto sniffs them:
// formatFit counts by this index (and a checkpoint keeps the counts), so
// a new format goes last. Formats lists them in the CLIs' table's order.
var formats = [...]format{
	{FormatPi, parsePi, sniffPi}, {FormatClaude, parseClaude, sniffClaude}, {FormatOpencode, parseOpencode, sniffOpencode},
	{FormatGemini, parseGemini, sniffGemini}, {FormatCodex, parseCodex, sniffCodex},
}

// formatIndex is the index of the format named f in formats, -1 for none.
func formatIndex(f string) int {
	for i := range formats {
		if formats[i].name == f {
			return i
		}
	}
	return -1
}

func (e *Engine) setFormat(f string) {
	if i := formatIndex(f); i >= 0 {
		e.f.Active, e.parse = f, formats[i].parse
		c, _ := agents.Lookup(f)
		e.side = c.ModelSide()
	}
}

// parseLine reads one line (prefix and spaces already trimmed) into e.ev.
// The whole line must be one JSON object; the event is applied only then.
// A line whose keys or compared words write ASCII as \u escapes is read
// again from a canonical copy (internal/jsonscan/spelling.go).
func (e *Engine) parseLine(line []byte) bool {
	undecided := e.parse == nil
	ok := e.parseOnce(line)
	if e.sc.Esc {
		e.canon = jsonscan.Canonicalize(e.canon, line)
		e.ev = event{}
		ok = e.parseOnce(e.canon)
	}
	if !ok && undecided { // auto settles only on a line its format reads
		e.f.Active, e.parse = "", nil
	}
	return ok
}

// parseOnce parses line with the active format. auto, not decided yet,
// settles the format only from a line that is valid JSON and an event of
// exactly one format (parseLine undoes it when the parser does not read
// the line); a line two formats claim decides nothing.
func (e *Engine) parseOnce(line []byte) bool {
	e.sc.Esc = false
	if e.parse != nil {
		return e.parseWith(line)
	}
	if !json.Valid(line) {
		return false
	}
	i := sniffIndex(line)
	if i < 0 {
		return false
	}
	e.setFormat(formats[i].name)
	return e.parseWith(line)
}

func (e *Engine) parseWith(line []byte) bool {
	s := &e.sc
	s.Reset(line)
	if !s.Enter() {
		return false
	}
	o := &e.obj // not a local: the parser is called through a func value, so a local would escape
	*o = jsonscan.Obj{}
	k, ok := s.Key(o)
	if !ok {
		return false
	}
	var typ []byte
	if string(k) == "type" {
		if typ, ok = s.Str(); !ok {
			return false
		}
	} else { // rare: "type" is not the first key; find it, then read from the top
		var esc bool // "type" may be spelled with escapes
		if typ, esc = topStr(line, "type"); typ == nil {
			s.Esc = esc
			return false
		}
		s.Reset(line)
		s.Enter()
		s.Esc = esc
		*o = jsonscan.Obj{}
	}
	e.pc = parseContext{turnOpen: e.f.Live, msgOpen: e.f.Msg.Open, pi: &e.pi, ev: &e.ev}
	if !e.parse(&e.pc, s, o, typ) || s.Bad {
		return false
	}
	return s.End()
}

// topString returns the raw value of a top-level string member, or nil.
func topString(line []byte, key string) []byte {
	v, _ := topStr(line, key)
	return v
}

// topStr is topString that also says whether a key or the value it read
// wrote ASCII as escapes (jsonscan.Scanner.Esc).
func topStr(line []byte, key string) ([]byte, bool) {
	var s jsonscan.Scanner
	s.Reset(line)
	if !s.Enter() {
		return nil, false
	}
	var o jsonscan.Obj
	for {
		k, ok := s.Key(&o)
		if !ok {
			return nil, s.Esc
		}
		if string(k) == key && s.Peek() == '"' {
			v, _ := s.Str()
			return v, s.Esc
		}
		if !s.Skip() {
			return nil, s.Esc
		}
	}
}

// topHas reports whether a top-level member named key exists.
func topHas(line []byte, key string) bool {
	var s jsonscan.Scanner
	s.Reset(line)
	if !s.Enter() {
		return false
	}
	var o jsonscan.Obj
	for {
		k, ok := s.Key(&o)
		if !ok {
			return false
		}
		if string(k) == key {
			return true
		}
		if !s.Skip() {
			return false
		}
	}
}

// sniff recognises the format of one line for auto: the one format that
// claims it (sniffIndex), "" when none does or two do. A line no format
// claims (a banner, an "error" event) decides nothing.
func sniff(line []byte) string {
	if i := sniffIndex(line); i >= 0 {
		return formats[i].name
	}
	return ""
}

// readMoney reads a cost member as exact decimal Money. ok is false for
// anything but a non-negative number: null, a string ("5"), a bool, an
// object, an array, a negative amount, and the NaN / Infinity / -Infinity
// that Python's json module writes (accepted only here, where a cost
// stands). A cost that is not ok is ignored: the line's other content
// counts, and the cost stands where it was (it never lowers a total).
func readMoney(s *jsonscan.Scanner) (Money, bool) {
	switch c := s.Peek(); {
	case c == 'N':
		s.Literal("NaN")
		return 0, false
	case c == 'I':
		s.Literal("Infinity")
		return 0, false
	case c == '-' && s.Pos+1 < len(s.Buf) && s.Buf[s.Pos+1] == 'I':
		s.Literal("-Infinity")
		return 0, false
	case c != '-' && (c < '0' || c > '9'):
		s.Skip()
		return 0, false
	}
	lit, ok := s.Number()
	if !ok {
		return 0, false
	}
	m, ok := parseDecimal(lit)
	if !ok {
		return 0, s.Fail()
	}
	return m, m >= 0
}
