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
