package sidecar

import (
	"os"
	"path/filepath"
	"testing"
)

// The record of the line being fed outlives the process that wrote it (a
// new mapping of the file reads it back), names the line by number and
// fingerprint, and is gone once the line was handled. A record cut short
// (a kill between its words) or of another file's making names no line.
func TestFeedingRecord(t *testing.T) {
	dir := t.TempDir()
	line := []byte(`2026-12-06T22:00:00.000000001Z {"type":"assistant"}`)
	fp := lineFingerprint(line, false)
	f, left, err := openFeeding(dir)
	if err != nil || left != (lineMark{}) {
		t.Fatalf("a new record: %+v %v", left, err)
	}
	f.begin(7, fp)
	f.release() // the process dies feeding line 7

	f, left, err = openFeeding(dir)
	if err != nil || !left.is(7, fp) || left.is(8, fp) || left.is(7, lineFingerprint(line, true)) {
		t.Fatalf("after a death on line 7: %+v %v", left, err)
	}
	f.begin(7, fp)
	f.end()
	f.release()
	if _, left, _ = openFeeding(dir); left != (lineMark{}) {
		t.Errorf("after the line was handled: %+v", left)
	}

	for name, words := range map[string][3]uint64{
		"cut short":  {7, fp, 0},
		"no line":    {0, fp, feedingSum(0, fp)},
		"other line": {8, fp, feedingSum(7, fp)},
	} {
		f, _, _ := openFeeding(dir)
		*f.words = words
		f.release()
		if _, left, _ := openFeeding(dir); left != (lineMark{}) {
			t.Errorf("%s: %+v", name, left)
		}
	}
}

// A record that cannot be made (a directory in its place) is an error, and
// the sidecar goes on without it.
func TestFeedingRecordRefusesADirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, feedingName), 0o700); err != nil {
		t.Fatal(err)
	}
	f, left, err := openFeeding(dir)
	if err == nil || left != (lineMark{}) {
		t.Fatalf("%+v %v", left, err)
	}
	f.begin(1, 2) // records nothing, and does not fail
	f.end()
}

// Lines that differ in length, head, tail or cut have different
// fingerprints; the middle of a long line is not read.
func TestLineFingerprint(t *testing.T) {
	base := make([]byte, 1000)
	for i := range base {
		base[i] = 'a'
	}
	variant := func(i int) []byte {
		b := append([]byte(nil), base...)
		b[i] = 'b'
		return b
	}
	fps := map[uint64]string{lineFingerprint(base, false): "base"}
	for name, fp := range map[string]uint64{
		"cut": lineFingerprint(base, true), "shorter": lineFingerprint(base[:999], false),
		"head": lineFingerprint(variant(3), false), "tail": lineFingerprint(variant(997), false),
	} {
		if other, ok := fps[fp]; ok {
			t.Errorf("%s has the fingerprint of %s", name, other)
		}
		fps[fp] = name
	}
	if lineFingerprint(variant(500), false) != lineFingerprint(base, false) {
		t.Error("the middle of the line was read")
	}
}

// BenchmarkFeedingRecord is what the record costs per line: the
// fingerprint of a 1 KiB line, and setting and clearing the record. Compare
// it with the engine's few µs per line of this size (docs/performance.md).
func BenchmarkFeedingRecord(b *testing.B) {
	f, _, err := openFeeding(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer f.release()
	line := make([]byte, 1024)
	n := 0
	for b.Loop() {
		n++
		f.begin(n, lineFingerprint(line, false))
		f.end()
	}
}
