package monitor

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode"
	"unicode/utf8"

	"turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"
)

// DetectorRepetition names repetition, a pattern detector,
// in reports, conditions and metrics (docs/design.md#repetition).
const DetectorRepetition = "repetition"

// repetition trips degenerate on streamed text (text or thinking, within
// one model message and one kind) whose last N = repeatedTextBytes bytes
// have a period p of 1..256 bytes, p <= N/2, and whose pattern is not
// whitespace only (that is degeneration's): the event that carries the Nth
// such byte trips. The fold measures the run (repeatTracker).
func repetition(s *State) (reason, message string, failed bool) {
	n := s.Guards.RepeatedTextBytes
	if n == 0 || s.RepeatBytes < n {
		return "", "", false
	}
	return DetectorRepetition, "the model repeated a " + strconv.Itoa(s.RepeatPeriod) + "-byte pattern for " + strconv.Itoa(n) + " bytes", true
}

const (
	repWindow = 256 // the longest period, and the text held per message and kind
	repProbe  = 8   // a period is followed once this many bytes matched
	repCands  = 4   // periods followed at once
)

// repeatTracker follows periodic runs in the decoded text of one message
// and kind. It holds the last repWindow bytes (each written twice, so the
// window is one contiguous slice) and a few candidate periods, each with
// the length of its run. Once followed, a candidate costs one comparison
// per byte. Candidates are found two ways, so that ordinary text costs a
// few operations per byte: every repSmall bytes, the periods up to repSmall
// are tried on the last bytes; and at anchor grams (the last repGram bytes,
// one in four by hash, chosen by content so both copies of a pattern agree)
// a table says where that gram was last seen, and its distance is tried.
// A period of more than repSmall bytes is found when one of its grams is an
// anchor: a pattern of p bytes holds p grams, so it is missed with a
// chance of (3/4)^p, under 1e-4 for p > repSmall. Its memory is fixed.
// Fields are exported for the checkpoint.
type repeatTracker struct {
	Buf      [2 * repWindow]byte
	N        int64 // bytes fed
	Cands    [repCands]repCand
	NC       int
	Full     int64 // bytes in a row equal to the byte repWindow before
	FullFrom int64 // Full when the current delta began
	// Best is the longest eligible run (Period) reached since the caller
	// last cleared it.
	Best   int64
	Period int
	MaxP   int
	// Pend holds NP raw (escaped) bytes not fed yet: while a message's text is
	// shorter than the guard no run can reach it, so its deltas are only
	// buffered, and fed when the buffer fills or the text could reach the
	// guard (feedDelta). A message shorter than both is never fed.
	Pend [repPend]byte
	NP   int
}

// repCand is a period P and how many bytes in a row (M) equalled the byte
// P before them: the run is M + P bytes, counting the first copy. Text
// says whether the pattern holds a non-whitespace character.
type repCand struct {
	P    int
	M    int64
	Text bool
	From int64 // M when the current delta began (-1: found in it): a run is judged on the deltas it grew in
}

// feedRaw feeds raw (still escaped) JSON string contents and returns the
// longest eligible run any byte of it reached, with its period. maxP bounds
// the period (N/2 of the guard; 0 for none).
func (t *repeatTracker) feedRaw(raw []byte, maxP int) (run int64, period int) {
	t.flush()
	t.Best, t.Period, t.MaxP = 0, 0, maxP
	for k := 0; k < t.NC; k++ {
		t.Cands[k].From = t.Cands[k].M
	}
	t.FullFrom = t.Full
	t.decode(raw)
	if t.NC == 0 && maxP > 0 && maxP < repEvery {
		t.probe() // a small guard is judged at the end of each delta too
	}
	for k := 0; k < t.NC; k++ {
		t.note(&t.Cands[k])
	}
	return t.Best, t.Period
}

// feedDelta feeds one streamed delta (raw, escaped) under a guard of n
// bytes. A run is never longer than the text it is in, so while the
// message's text, this delta included, is shorter than n, no run can trip:
// the delta is only kept in Pend, and reports no run. The tracker's
// state does not depend on where the bytes are cut (chunks end at
// multiples of repChunk, probes at multiples of repEvery), so from the
// delta that could reach n on, it reports what feedRaw of every delta
// would have. Small guards (n/2 < repEvery) probe at each delta's end and
// are fed at once; so is every delta with the guard off (n = 0), where
// calibration measures runs of any length.
func (t *repeatTracker) feedDelta(raw []byte, n int) (run int64, period int) {
	if n/2 < repEvery || t.N+int64(t.NP)+int64(len(raw)) >= int64(n) {
		return t.feedRaw(raw, n/2)
	}
	t.pend(raw)
	return 0, 0
}

// flush feeds what Pend holds.
func (t *repeatTracker) flush() {
	if t.NP > 0 {
		np := t.NP
		t.NP = 0
		t.decode(t.Pend[:np])
	}
}

// pend keeps a delta's raw bytes in Pend, to be decoded when fed: a
// buffer of deltas decodes as the deltas one by one, unless one ends in a
// backslash or a \u escape (half of a surrogate pair, or a broken
// escape); such a delta is fed at once.
func (t *repeatTracker) pend(raw []byte) {
	l := len(raw)
	if l == 0 {
		return
	}
	if l > len(t.Pend)-t.NP || raw[l-1] == '\\' || l >= 6 && raw[l-6] == '\\' && raw[l-5] == 'u' {
		t.flush()
		if l > len(t.Pend) || raw[l-1] == '\\' || l >= 6 && raw[l-6] == '\\' && raw[l-5] == 'u' {
			t.decode(raw)
			return
		}
	}
	t.NP += copy(t.Pend[t.NP:], raw)
}

// decode feeds raw JSON string contents, decoded into a buffer fed in
// chunks: feeding each stretch between escapes apart would cost a chunk
// each.
func (t *repeatTracker) decode(raw []byte) {
	if bytes.IndexByte(raw, '\\') < 0 {
		t.feed(raw) // nothing to decode
		return
	}
	var buf [repChunk]byte
	n := 0
	for len(raw) > 0 {
		j := bytes.IndexByte(raw, '\\')
		seg := raw
		if j >= 0 {
			seg = raw[:j]
		}
		for len(seg) > 0 {
			k := copy(buf[n:], seg)
			n += k
			seg = seg[k:]
			if n == len(buf) {
				t.feed(buf[:n])
				n = 0
			}
		}
		if j < 0 {
			break
		}
		raw = raw[j:]
		if n > len(buf)-utf8.UTFMax {
			t.feed(buf[:n])
			n = 0
		}
		if len(raw) < 2 { // a lone backslash at the end
			buf[n] = raw[0]
			n++
			break
		}
		r, k := unescapeAt(raw, 0)
		n += utf8.EncodeRune(buf[n:], r)
		raw = raw[k:]
	}
	if n > 0 {
		t.feed(buf[:n])
	}
}

// feed feeds decoded bytes, a chunk at a time.
func (t *repeatTracker) feed(b []byte) {
	for len(b) > 0 { // chunks end at multiples of repChunk, so probes fall at chunk ends
		k := min(len(b), repChunk-int(t.N%repChunk))
		t.chunk(b[:k])
		b = b[k:]
	}
}

// repChunk bounds a chunk fed at once; repEvery
// is how often new periods are looked for (a multiple of it): a run is
// found within repEvery bytes of matching repProbe bytes, and measured back
// within the window. Every 512 bytes would save a fifth of the fold's time
// on ordinary text, but a run found that late is counted up to 256 bytes
// short (a 4096-byte run of a 29-byte pattern tripped three deltas late).
const (
	repChunk = 256
	repEvery = 256
)

// repPend is the text buffered before it is fed: the default guard, so
// that a message shorter than it costs a copy.
const repPend = 4096

// chunk feeds decoded bytes up to the next multiple of repChunk: the
// candidates are followed in bulk, the bytes written, then new candidates
// looked for.
func (t *repeatTracker) chunk(c []byte) {
	win := t.window()
	for k := 0; k < t.NC; {
		cd := &t.Cands[k]
		m, whole := t.matchBack(win, c, cd.P)
		cd.M += int64(m)
		if whole {
			k++
			continue
		}
		t.note(cd)
		t.NC--
		t.Cands[k] = t.Cands[t.NC]
	}
	full, broke := t.Full, false // the period of a whole window, followed always (it cannot be looked back for)
	if len(win) == repWindow {
		if m := matchLen(c, win[:len(c)]); m == len(c) {
			full += int64(m)
		} else {
			t.noteFull(win, full+int64(m)) // before the byte that broke it, still in win
			full, broke = int64(suffixLen(c, win[:len(c)])), true
		}
	}
	x := int(t.N & (repWindow - 1))
	n := copy(t.Buf[x:repWindow], c)
	copy(t.Buf[x+repWindow:], c[:n])
	if n < len(c) {
		copy(t.Buf[:], c[n:])
		copy(t.Buf[repWindow:], c[n:])
	}
	before := t.N
	t.N += int64(len(c))
	t.Full = full
	if !broke || full >= repWindow {
		t.noteFull(t.window(), full)
	}
	if t.N/repEvery != before/repEvery {
		t.probe()
	}
}

// matchBack counts how many bytes of c, in order, equal the byte p before
// them (win holds what came before c), and whether all of them do.
func (t *repeatTracker) matchBack(win, c []byte, p int) (int, bool) {
	if p > len(win) {
		return 0, len(c) == 0
	}
	old := win[len(win)-p:]
	n := min(p, len(c))
	m := matchLen(c[:n], old[:n])
	if m < n || n == len(c) {
		return m, m == len(c)
	}
	m2 := matchLen(c[p:], c[:len(c)-p])
	return m + m2, m+m2 == len(c)
}

// noteFull notes the run of period repWindow when it spans two copies.
func (t *repeatTracker) noteFull(win []byte, m int64) {
	if m != t.FullFrom && m >= repWindow && len(win) == repWindow && (t.MaxP == 0 || t.MaxP >= repWindow) && hasPatternText(win, repWindow) {
		t.note(&repCand{P: repWindow, M: m, Text: true})
	}
}

// suffixLen is the length of the common suffix of a and b (same length).
func suffixLen(a, b []byte) int {
	i := len(a)
	for ; i >= 8; i -= 8 {
		if x := binary.LittleEndian.Uint64(a[i-8:]) ^ binary.LittleEndian.Uint64(b[i-8:]); x != 0 {
			return len(a) - i + bits.LeadingZeros64(x)/8
		}
	}
	for ; i > 0 && a[i-1] == b[i-1]; i-- {
	}
	return len(a) - i
}

// matchLen is the length of the common prefix of a and b (len(a) <= len(b)).
func matchLen(a, b []byte) int {
	i := 0
	for ; i+8 <= len(a); i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for ; i < len(a) && a[i] == b[i]; i++ {
	}
	return i
}

// note folds a candidate's run into Best when it spans two copies of a
// pattern with text, of a period within MaxP.
func (t *repeatTracker) note(cd *repCand) {
	p := int64(cd.P)
	if cd.M == cd.From || cd.M < p || !cd.Text || t.MaxP > 0 && cd.P > t.MaxP {
		return
	}
	if l := cd.M + p; l > t.Best || l == t.Best && cd.P < t.Period {
		t.Best, t.Period = l, cd.P
	}
}

// probe looks for periods whose last repProbe bytes match: the earlier
// sights of the rarest-looking of the last repProbe bytes are few, those where
// all repProbe match fewer; they are followed, the smallest period first.
func (t *repeatTracker) probe() {
	if t.NC == repCands {
		return
	}
	win := t.window()
	last := len(win) - 1
	if last < repProbe {
		return
	}
	d := 0 // the byte to compare the window with: a space or a common letter matches too often
	for k := 1; k < repProbe; k++ {
		if byteRarity[win[last-k]] > byteRarity[win[last-d]] {
			d = k
		}
	}
	// The earlier sights of that byte (SIMD IndexByte), kept so that the
	// smallest periods are tried first.
	var at [repWindow / 4]uint8 // the latest sights, round: the smallest periods
	n, hay, c := 0, win[:last-d], win[last-d]
	for off := 0; ; {
		j := bytes.IndexByte(hay[off:], c)
		if j < 0 {
			break
		}
		off += j
		at[n%len(at)] = uint8(off)
		n++
		off++
	}
	for k := n - 1; k >= max(0, n-len(at)) && t.NC < repCands; k-- {
		p := last - d - int(at[k%len(at)])
		if p <= last-repProbe+1 && binary.LittleEndian.Uint64(win[last-7:]) == binary.LittleEndian.Uint64(win[last-7-p:]) {
			t.track(p) // the last repProbe bytes match
		}
	}
}

// byteRarity ranks bytes by how rarely they repeat by chance in text and
// code: spaces, tabs and newlines least, then the commonest letters and
// punctuation of code, the other lower-case letters, and anything else most.
var byteRarity = func() (r [256]uint8) {
	for c := range r {
		r[c] = 4
	}
	for c := 'a'; c <= 'z'; c++ {
		r[c] = 3
	}
	for _, c := range "dlcumwfgypb" {
		r[c] = 2
	}
	for _, c := range "etaoinshr().,\"_=" {
		r[c] = 1
	}
	for _, c := range " \n\t" {
		r[c] = 0
	}
	return r
}()

// window returns the last min(N, repWindow) bytes, oldest first.
func (t *repeatTracker) window() []byte {
	w := min(t.N, repWindow)
	end := (t.N-1)&(repWindow-1) + repWindow + 1
	return t.Buf[end-w : end]
}

// track adds period p (unless followed already, or a multiple of one that
// is) with its run measured within the window; a coincidence measures
// short and is not followed.
func (t *repeatTracker) track(p int) {
	for k := 0; k < t.NC; k++ {
		if p%t.Cands[k].P == 0 {
			return
		}
	}
	win := t.window()
	last := len(win) - 1
	m := 0
	for m+p <= last && win[last-m] == win[last-m-p] {
		m++
	}
	if m < repProbe {
		return
	}
	t.Cands[t.NC] = repCand{P: p, M: int64(m), Text: hasPatternText(win, p), From: -1}
	t.NC++
}

// hasPatternText reports whether the last p bytes of win hold a
// non-whitespace character (runes that start up to 3 bytes before them
// are read whole).
func hasPatternText(win []byte, p int) bool {
	from := len(win) - p
	for k := max(0, from-utf8.UTFMax+1); k < len(win); k++ {
		c := win[k]
		if c < utf8.RuneSelf {
			if k >= from && !isSpaceByte(c) {
				return true
			}
			continue
		}
		if !utf8.RuneStart(c) || !utf8.FullRune(win[k:]) {
			continue
		}
		r, n := utf8.DecodeRune(win[k:])
		if k+n > from && (r == utf8.RuneError || !unicode.IsSpace(r)) {
			return true
		}
	}
	return false
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// unescapeAt decodes the JSON escape at raw[i] (a backslash): the rune and
// the bytes it took. A surrogate pair decodes to one rune; a bad escape
// reads as its bytes.
func unescapeAt(raw []byte, i int) (rune, int) {
	switch c := raw[i+1]; c {
	case 'n':
		return '\n', 2
	case 't':
		return '\t', 2
	case 'r':
		return '\r', 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'u':
		r, ok := jsonscan.Hex4(raw, i+2)
		if !ok {
			return '\\', 1
		}
		if r >= 0xD800 && r < 0xDC00 && i+12 <= len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
			if lo, ok := jsonscan.Hex4(raw, i+8); ok && lo >= 0xDC00 && lo < 0xE000 {
				return (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000, 12
			}
		}
		return r, 6
	default: // \" \\ \/
		return rune(c), 2
	}
}
