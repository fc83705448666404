package monitor

import "bytes"

// piMemo is what one line's pi message leaves for the next line's. pi
// restates the whole partial message on every message_update: the text
// written so far starts the next line's text, and the usage's counts
// before its total seldom change within a message. Both are bytes this
// engine read and checked on a line before: where the next line holds the
// same bytes at the same place, they are the same valid JSON (a value's
// extent and validity follow from its bytes), and reading them again
// would only repeat the work. The memo is a cache and nothing else: a line
// that differs is read as before and replaces it, its contents never
// reach State, and a checkpoint does not keep it.
type piMemo struct {
	// text is the contents of the last content's first text block, as
	// written between its quotes: no quote unescaped in it, and it ends
	// between escapes (the quote after it closed the string).
	text []byte
	// usage is the last usage read in pi's order, from its '{' to its
	// total's value (piUsageHead): keys and numbers checked.
	usage []byte
	// tmpl is the last message read in order, in pieces.
	tmpl piTemplate
}

// piMemoOn enables the memo, and the fold's use of the text's extent the
// parser found (event.contentText); tests turn both off to compare
// engines with and without them.
var piMemoOn = true

// piMemoMax bounds each part of the memo; a longer text is read whole.
const piMemoMax = 1 << 20

// piTextHead opens a content whose first block is text, as pi writes it.
const piTextHead = `[{"type":"text","text":"`

// readPiContent reads a message's content value, the scanner at it, and
// returns its raw bytes (nil on an error, the scanner failed). A content
// whose first block is text, as pi writes it, has that text read from
// where the memo's text ends, when the text starts with the memo's; what
// follows the text is read with the full grammar. Any other content is
// one value, read whole. text is where that text's contents start and end
// (its closing quote) in the content returned, or 0, 0.
func readPiContent(s *scanner, memo *piMemo) (v []byte, text [2]int) {
	b, start := s.b, s.i
	if !hasLit(b, start, piTextHead) {
		v, _ = s.value()
		return v, text
	}
	from := start + len(piTextHead)
	j := from
	if n := memo.textLen(); n > 0 && len(b)-from > n && bytes.Equal(b[from:from+n], memo.text) {
		j = from + n // the memo's text ends between escapes: scan on as from a string's start
	}
	end, _ := scanString(b, j)
	if end < 0 {
		s.fail()
		return nil, text
	}
	memo.setText(b[from:end], j-from)
	s.i = end + 1
	o := obj{n: 2} // the rest of the block, after "type" and "text"
	for s.next(&o) {
		s.skip()
	}
	a := arr{n: 1} // the blocks after it
	for s.elem(&a) {
		s.skip()
	}
	if s.bad {
		return nil, text
	}
	return b[start:s.i], [2]int{from - start, end - start}
}

func (m *piMemo) textLen() int {
	if m == nil {
		return 0
	}
	return len(m.text)
}

// setText keeps text (the contents of a string) as the memo's, of which
// the first kept bytes are the memo's already.
func (m *piMemo) setText(text []byte, kept int) {
	if m == nil {
		return
	}
	if len(text) > piMemoMax {
		m.text = m.text[:0]
		return
	}
	m.text = append(m.text[:kept], text[kept:]...)
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

// piTemplate is a message read in order (readPiMessageInOrder) whose
// content starts with a text block, cut where pi's restatements of one
// message differ from line to line: the text grows, the usage's total
// changes. Each piece was checked where it stood, and what a piece holds
// does not depend on what stands before it (the scanner is in the same
// place at each cut, whatever the text or the total), so a message made
// of the same pieces around any text and any plain number is the same
// valid message: readPiMessageMemo reads it with four comparisons, a scan
// of the text's new bytes and the total.
type piTemplate struct {
	head []byte // from the message's '{' to its text's contents
	mid  []byte // from the text's closing quote to the total's value
	tail []byte // from after the total to the message's closing brace
	// What the pieces say, as offsets into them.
	assistant  bool
	contentEnd int    // content's end in mid
	stop       [2]int // stopReason's contents in tail, or 0, 0 for null
	errMsg     [2]int // errorMessage's contents in tail, or 0, 0 when absent or null
}

// piCut is where readPiMessageInOrder found the pieces of a template in
// its line; 0 where it did not.
type piCut struct {
	content, usage int    // where content's and usage's values start
	total          [2]int // the total's literal
	stop, errMsg   [2]int // as in piTemplate, but in the line
}

// setTemplate keeps the message b[start:end], read in order into t with
// the cuts c, as the memo's template.
func (m *piMemo) setTemplate(b []byte, start, end int, t *piMessage, c piCut) {
	if m == nil || end-start > piMemoMax {
		return
	}
	p := &m.tmpl
	textAt, textEnd := c.content+t.text[0], c.content+t.text[1]
	p.head = append(p.head[:0], b[start:textAt]...)
	p.mid = append(p.mid[:0], b[textEnd:c.total[0]]...)
	p.tail = append(p.tail[:0], b[c.total[1]:end]...)
	p.assistant = t.assistant
	p.contentEnd = c.content + len(t.content) - textEnd
	p.stop, p.errMsg = [2]int{}, [2]int{}
	if t.stop != nil {
		p.stop = [2]int{c.stop[0] - c.total[1], c.stop[1] - c.total[1]}
	}
	if t.errMsg != nil {
		p.errMsg = [2]int{c.errMsg[0] - c.total[1], c.errMsg[1] - c.total[1]}
	}
}

// readPiMessageMemo reads a message made of the memo's template pieces
// around a text that starts with the memo's text (pi's next restatement
// of the message before), to what readPiMessageInOrder reads. At the
// first byte that differs it returns false, having moved nothing and set
// nothing in m. grown is the text's bytes past the memo's.
func readPiMessageMemo(s *scanner, m *piMessage, memo *piMemo) (grown []byte, ok bool) {
	if memo == nil || len(memo.tmpl.head) == 0 || s.bad || !piInOrder {
		return nil, false
	}
	p := &memo.tmpl
	b, start := s.b, s.i
	from := start + len(p.head)
	n := len(memo.text)
	if len(b)-from <= n || !bytes.HasPrefix(b[start:], p.head) || !bytes.Equal(b[from:from+n], memo.text) {
		return nil, false
	}
	end, _ := scanString(b, from+n) // the memo's text ends between escapes
	if end < 0 || !bytes.HasPrefix(b[end:], p.mid) {
		return nil, false
	}
	at := end + len(p.mid)
	if at >= len(b) || b[at]-'0' >= 10 || numberEnd(b, at) < 0 {
		return nil, false // a total of another kind: the in-order reader decides
	}
	s.i = at
	cost, ok := readMoney(s)
	if s.bad {
		return nil, true // as the in-order reader fails on these same bytes
	}
	tail := s.i
	if !bytes.HasPrefix(b[tail:], p.tail) {
		return nil, s.rewind(start)
	}
	t := *m
	content := from - len(piTextHead)
	t.assistant = p.assistant
	t.content, t.text = b[content:end+p.contentEnd], [2]int{len(piTextHead), end - content}
	t.cost, t.hasCost = cost, ok
	t.stop, t.hasStop = nil, true
	if p.stop[1] > 0 {
		t.stop = b[tail+p.stop[0] : tail+p.stop[1]]
	}
	if p.errMsg[1] > 0 {
		t.errMsg = b[tail+p.errMsg[0] : tail+p.errMsg[1]]
	}
	s.i = tail + len(p.tail)
	t.raw = b[start:s.i]
	memo.setText(b[from:end], n)
	*m = t
	return b[from+n : end], true
}
