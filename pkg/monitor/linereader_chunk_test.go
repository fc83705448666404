package monitor

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// Lines longer than one read come back whole, whatever the
// reads return: the newline search resumes where the last one stopped.
func TestLineReaderLinesOverReads(t *testing.T) {
	const piece = 64 << 10 // what a pipe gives at once
	lines := []string{strings.Repeat("a", 3*piece+5), "b", strings.Repeat("c", piece-1), strings.Repeat("d", piece), "", strings.Repeat("e", piece+1)}
	in := strings.Join(lines, "\n") + "\n"
	for name, r := range map[string]io.Reader{
		"pipe":    pieceReader{strings.NewReader(in), piece},
		"onebyte": iotest.OneByteReader(strings.NewReader(in)),
	} {
		t.Run(name, func(t *testing.T) {
			lr := NewLineReader(r, 0)
			for i, want := range lines {
				l, ok := lr.Next()
				if !ok || string(l) != want {
					t.Fatalf("line %d: %d bytes (ok %v), want %d", i, len(l), ok, len(want))
				}
			}
			if _, ok := lr.Next(); ok {
				t.Fatal("a line past the end")
			}
		})
	}
}

// pieceReader returns at most n bytes a read, as a pipe does.
type pieceReader struct {
	r io.Reader
	n int
}

func (p pieceReader) Read(b []byte) (int, error) { return p.r.Read(b[:min(len(b), p.n)]) }
