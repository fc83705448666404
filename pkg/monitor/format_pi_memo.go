package monitor

import (
	"bytes"

	"turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"
)

// piMemo is what one line's pi message leaves for the next line's. pi
// restates the whole partial message on every message_update: the next
// line's message is the same bytes but for a longer string in the block
// being streamed and a new usage total (piTemplate), and the usage's
// counts before its total seldom change within a message. These are bytes
// this engine read and checked on a line before: where the next line holds
// the same bytes at the same place, they are the same valid JSON (a
// value's extent and validity follow from its bytes), and reading them
// again would only repeat the work. The memo is a cache and nothing else: a line
// that differs is read as before and replaces it, its contents never
// reach State, and a checkpoint does not keep it.
type piMemo struct {
	// usage is the last usage read in pi's order, from its '{' to its
	// total's value (piUsageHead): keys and numbers checked.
	usage []byte
	// tmpl is the last message read in order, in pieces.
	tmpl piTemplate
}

// piMemoOn enables the memo, and the fold's use of the strings' extents
// the parser found (event.contentStrs); tests turn both off to compare
// engines with and without them.
var piMemoOn = true

// piMemoMax bounds the memo: a longer message or usage is not kept.
const piMemoMax = 1 << 20

// piBlockHeads open the content blocks whose strings pi streams as
// deltas, as pi writes them.
var piBlockHeads = [...]string{`{"type":"text","text":"`, `{"type":"thinking","thinking":"`}

// piBlockHead returns the length of the block head at i, or 0.
func piBlockHead(b []byte, i int) int {
	for _, h := range piBlockHeads {
		if jsonscan.HasLit(b, i, h) {
			return len(h)
		}
	}
	return 0
}

// readPiContent reads a message's content value, the scanner at it, and
// returns its raw bytes (nil on an error, the scanner failed) and where
// the strings of its text and thinking blocks are in it. A content that
// opens with such a block, as pi writes it, is read block by block: each
// of those strings on its own (the one the memo's template cut from where
// the template's ends, when it starts with the template's), the rest of
// each block and the other blocks with the full grammar. Any other
// content is one value, read whole, and reports no strings.
func readPiContent(s *jsonscan.Scanner, memo *piMemo) (v []byte, strs jsonscan.Spans) {
	b, start := s.Buf, s.Pos
	if !jsonscan.HasLit(b, start, "[") || piBlockHead(b, start+1) == 0 {
		v, _ = s.Value()
		return v, strs
	}
	s.Pos++
	var a jsonscan.Arr
	for s.Elem(&a) {
		h := piBlockHead(b, s.Pos)
		if h == 0 {
			s.Skip()
			continue
		}
		from := s.Pos + h
		end, _ := jsonscan.ScanString(b, memo.resume(b, from, strs.N))
		if end < 0 {
			s.Fail()
			return nil, jsonscan.Spans{}
		}
		strs.Add(from-start, end-start)
		s.Pos = end + 1
		o := jsonscan.Obj{N: 2} // the rest of the block, after "type" and its string
		for s.Next(&o) {
			s.Skip()
		}
	}
	if s.Bad {
		return nil, jsonscan.Spans{}
	}
	return b[start:s.Pos], strs
}

// resume returns where to scan on the string whose contents start at
// from, the content's k-th text or thinking string: past the template's
// string when the template cut its k-th and the bytes at from start with
// it (a string's whole contents, so it ends between escapes: the scan goes
// on as from a string's start), else from.
func (m *piMemo) resume(b []byte, from, k int) int {
	if m == nil || len(m.tmpl.head) == 0 || k != m.tmpl.block {
		return from
	}
	if n := len(m.tmpl.str); n > 0 && len(b)-from > n && bytes.Equal(b[from:from+n], m.tmpl.str) {
		return from + n
	}
	return from
}

// usageHead returns the end of the memo's usage head if b holds it at i,
// or -1.
func (m *piMemo) usageHead(b []byte, i int) int {
	if m == nil || len(m.usage) == 0 || !bytes.HasPrefix(b[i:], m.usage) {
		return -1
	}
	return i + len(m.usage)
}

func (m *piMemo) setUsage(head []byte) {
	if m != nil && len(head) <= piMemoMax {
		m.usage = append(m.usage[:0], head...)
	}
}

// piTemplate is a message read in order (readPiMessageInOrder), cut
// where pi's restatements of one message differ from line to line: the
// string of the block being streamed grows, the usage's total changes.
// Each piece was checked where it stood, and what a piece holds does not
// depend on what stands before it (the scanner is in the same place at
// each cut, whatever the string or the total), so a message made of the
// same pieces around any string contents and any plain number is the same
// valid message: readPiMessageMemo reads it with four comparisons, a scan
// of the string's new bytes and the total.
type piTemplate struct {
	head []byte // from the message's '{' to the contents of the string cut
	str  []byte // that string's contents, as written
	mid  []byte // from its closing quote to the total's value
	tail []byte // from after the total to the message's closing brace
	// What the pieces say, as offsets into them.
	assistant     bool
	block         int            // which of the message's strs is cut
	content       int            // content's start in head
	contentEnd    int            // content's end in mid
	before, after jsonscan.Spans // the other blocks' strings: in content (before the cut) or in mid
	stop          [2]int         // stopReason's contents in tail, or 0, 0 for null
	errMsg        [2]int         // errorMessage's contents in tail, or 0, 0 when absent or null
}

// piCut is where readPiMessageInOrder found the pieces of a template in
// its line; 0 where it did not.
type piCut struct {
	content, usage int    // where content's and usage's values start
	total          [2]int // the total's literal
	stop, errMsg   [2]int // as in piTemplate, but in the line
}

// setTemplate keeps the message b[start:end], read in order into t with
// the cuts c, as the memo's template, cut at the string most likely to
// grow on the next line: the last one with contents (pi streams its
// blocks in order), else the first.
func (m *piMemo) setTemplate(b []byte, start, end int, t *piMessage, c piCut) {
	if m == nil || end-start > piMemoMax || t.strs.N == 0 {
		return
	}
	k := 0
	for j := t.strs.N - 1; j > 0; j-- {
		if from, end := t.strs.Span(j); end > from {
			k = j
			break
		}
	}
	from, to := t.strs.Span(k)
	from, to = c.content+from, c.content+to
	p := &m.tmpl
	p.head = append(p.head[:0], b[start:from]...)
	p.str = append(p.str[:0], b[from:to]...)
	p.mid = append(p.mid[:0], b[to:c.total[0]]...)
	p.tail = append(p.tail[:0], b[c.total[1]:end]...)
	p.assistant, p.block = t.assistant, k
	p.content, p.contentEnd = c.content-start, c.content+len(t.content)-to
	p.before, p.after = jsonscan.Spans{}, jsonscan.Spans{}
	for j := 0; j < t.strs.N; j++ {
		switch a, z := t.strs.Span(j); {
		case j < k:
			p.before.Add(a, z)
		case j > k:
			p.after.Add(c.content+a-to, c.content+z-to)
		}
	}
	p.stop, p.errMsg = [2]int{}, [2]int{}
	if t.stop != nil {
		p.stop = [2]int{c.stop[0] - c.total[1], c.stop[1] - c.total[1]}
	}
	if t.errMsg != nil {
		p.errMsg = [2]int{c.errMsg[0] - c.total[1], c.errMsg[1] - c.total[1]}
	}
}

// readPiMessageMemo reads a message made of the memo's template pieces
// around a string that starts with the template's (pi's next restatement
// of the message before), to what readPiMessageInOrder reads. At the
// first byte that differs it returns false, having moved nothing and set
// nothing in m. grown is the string's bytes past the template's.
func readPiMessageMemo(s *jsonscan.Scanner, m *piMessage, memo *piMemo) (grown []byte, ok bool) {
	if memo == nil || len(memo.tmpl.head) == 0 || s.Bad || !piInOrder {
		return nil, false
	}
	p := &memo.tmpl
	b, start := s.Buf, s.Pos
	from := start + len(p.head)
	n := len(p.str)
	if len(b)-from <= n || !bytes.HasPrefix(b[start:], p.head) || !bytes.Equal(b[from:from+n], p.str) {
		return nil, false
	}
	end, _ := jsonscan.ScanString(b, from+n) // the template's string ends between escapes
	if end < 0 || !bytes.HasPrefix(b[end:], p.mid) {
		return nil, false
	}
	at := end + len(p.mid)
	if at >= len(b) || b[at]-'0' >= 10 {
		return nil, false // a total of another kind: the in-order reader decides
	}
	s.Pos = at
	cost, costOK := readMoney(s)
	if s.Bad {
		return nil, true // as the in-order reader fails on these same bytes
	}
	tail := s.Pos
	if !bytes.HasPrefix(b[tail:], p.tail) {
		return nil, s.Rewind(start)
	}
	t := *m
	content := start + p.content
	t.assistant = p.assistant
	t.content = b[content : end+p.contentEnd]
	t.strs = p.before
	t.strs.Add(from-content, end-content)
	for j := 0; j < p.after.N; j++ {
		a, z := p.after.Span(j)
		t.strs.Add(end+a-content, end+z-content)
	}
	t.cost, t.hasCost = cost, costOK
	t.stop, t.hasStop = nil, true
	if p.stop[1] > 0 {
		t.stop = b[tail+p.stop[0] : tail+p.stop[1]]
	}
	if p.errMsg[1] > 0 {
		t.errMsg = b[tail+p.errMsg[0] : tail+p.errMsg[1]]
	}
	s.Pos = tail + len(p.tail)
	t.raw = b[start:s.Pos]
	if end-from <= piMemoMax {
		p.str = append(p.str[:n], b[from+n:end]...)
	} else {
		p.head = p.head[:0] // too long to keep: the next line is read in order
	}
	*m = t
	return b[from+n : end], true
}
