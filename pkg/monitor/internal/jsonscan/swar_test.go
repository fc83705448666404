package jsonscan

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScanStringAgrees: the word-at-a-time string scan finds the same
// closing quote as the quote-and-count-backslashes scan, on strings of
// every length around the word size and the switch to IndexByte, with
// quotes, backslashes and non-ASCII at every position; and when it says
// there is no backslash, there is none.
func TestScanStringAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	alphabet := []string{"a", "a", "a", "a", `"`, `\`, `\\`, `\"`, "é", "\x80", "\xff"}
	for n := 0; n < 20000; n++ {
		var b bytes.Buffer
		for l := r.IntN(60); b.Len() < l; {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		line := b.Bytes()
		for from := 0; from <= min(len(line), 3); from++ {
			want := stringEndLong(line, from, from)
			got, bs := ScanString(line, from)
			if got != want {
				t.Fatalf("scanString(%q, %d) = %d, want %d", line, from, got, want)
			}
			if end := got; end >= 0 && !bs && bytes.IndexByte(line[from:end], '\\') >= 0 {
				t.Fatalf("scanString(%q, %d) says no backslash", line, from)
			}
		}
	}
}

// TestKeyAgrees: the word-at-a-time key reader reads what keySlow reads
// (the same key, position, member count and failure) on keys of every
// length around its 16-byte window, with quotes, backslashes, colons and
// spaces at every position.
func TestKeyAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	alphabet := []string{"a", "a", "a", "a", `"`, `\`, `\\`, `\"`, ":", " ", ",", "é"}
	for n := 0; n < 50000; n++ {
		var b bytes.Buffer
		if r.IntN(2) == 0 {
			b.WriteByte(',')
		}
		for l := r.IntN(40); b.Len() < l; {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		line := b.Bytes()
		for _, start := range []int{0, 1} {
			var fast, slow Scanner
			fast.Reset(line)
			slow.Reset(line)
			fo, so := Obj{N: start}, Obj{N: start}
			fk, fok := fast.Key(&fo)
			sk, sok := slow.keySlow(&so)
			if fok != sok || string(fk) != string(sk) || fast.Pos != slow.Pos || fo.N != so.N || fast.Bad != slow.Bad || fast.Esc != slow.Esc {
				t.Fatalf("key(%q, n=%d) = %q %v at %d; keySlow: %q %v at %d", line, start, fk, fok, fast.Pos, sk, sok, slow.Pos)
			}
		}
	}
}

// TestSkipAgrees: the one-loop skip accepts and rejects what the
// state-machine skip (skipDeep) does, and stops at the same byte, on
// corpus lines and on random mutations of them (bytes of JSON's grammar
// deleted, inserted and swapped), with nesting around its 64-level switch.
func TestSkipAgrees(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/corpus/*/*.jsonl")
	var lines [][]byte
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, bytes.Split(data, []byte("\n"))...)
	}
	for _, d := range []int{1, 63, 64, 65, 200} {
		lines = append(lines, []byte(strings.Repeat(`{"a":[`, d)+`1`+strings.Repeat(`]}`, d)))
		lines = append(lines, []byte(strings.Repeat(`[ `, d)+strings.Repeat(` ]`, d)))
	}
	lines = append(lines, []byte(` { "a" : [ 1 , -2.5e+3 , true , false , null , "x\"y" , { } , [ ] ] } `))
	r := rand.New(rand.NewPCG(11, 12))
	alphabet := []byte(`{}[]",: 0123456789-+.eEtrufalsn\`)
	check := func(line []byte) {
		var a, b Scanner
		a.Reset(line)
		b.Reset(line)
		okA, okB := a.skipNested(), b.skipDeep()
		if okA != okB || okA && a.Pos != b.Pos {
			t.Fatalf("skipNested(%q) = %v at %d; skipDeep: %v at %d", line, okA, a.Pos, okB, b.Pos)
		}
	}
	for _, l := range lines {
		check(l)
		for n := 0; n < 200 && len(l) > 0; n++ {
			m := append([]byte(nil), l...)
			for k := 0; k < 1+r.IntN(3); k++ {
				p := r.IntN(len(m))
				switch r.IntN(3) {
				case 0:
					m = append(m[:p], m[p+1:]...)
				case 1:
					m = append(m[:p], append([]byte{alphabet[r.IntN(len(alphabet))]}, m[p:]...)...)
				default:
					m[p] = alphabet[r.IntN(len(alphabet))]
				}
				if len(m) == 0 {
					break
				}
			}
			check(m)
			if len(m) > 1 {
				check(m[:r.IntN(len(m))])
			}
		}
	}
}
