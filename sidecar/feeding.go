package sidecar

import (
	"path/filepath"
	"sync/atomic"
)

// A line that crashed the sidecar is not fed again after the restart. An
// input the sidecar cannot survive (memory, or a bug) would otherwise kill
// it again on the same line after each restart, since a restart replays
// the lines after the last checkpoint: the turn would fail as infra, and
// between crashes nothing watches the agent. So before feeding a line the
// sidecar records, in its own volume, which line it is (its number in the
// stream and a fingerprint of its bytes), and clears the record once the
// line is handled. A sidecar that starts and finds a record left behind
// counts that line as unparsed when it comes again, as it does a line over
// the cap, and says so in its log (docs/design.md#bad-input).
//
// The record is three words of a small file mapped into memory: setting it
// costs a few stores per line and no system call, and a store is in the
// page cache the moment it is made, so the record outlives the process
// (an OOM kill included). The record covers the work the line's bytes
// decide (parsing, the fold, the calls judged for the hook), not the
// reports that follow, whose size is bounded: a kill between two lines, or
// while a handled line's reports are written (its checkpoint, its
// progress, a condition), leaves no record, so a sidecar restarted for any
// other reason than its input skips nothing (on the local node, a kill
// during those writes of a busy machine counted a line unparsed).

// feedingName is the record's file in the state directory.
const feedingName = "feeding"

// feedingSalt keeps a zero record from checking out.
const feedingSalt = 0x7475726e77617463

// lineMark names a line: its number in the stream (from 1; 0 for none) and
// its fingerprint.
type lineMark struct {
	line int
	fp   uint64
}

// is says whether the line numbered n with fingerprint fp is m.
func (m lineMark) is(n int, fp uint64) bool { return m.line != 0 && m.line == n && m.fp == fp }

// feeding is the record: line, fingerprint, check. Its zero value (nil
// words) records nothing.
type feeding struct {
	words *[3]uint64
	close func() error
}

// openFeeding maps the record in dir and returns the mark the sidecar
// before left in it, if any.
func openFeeding(dir string) (*feeding, lineMark, error) {
	words, closeFn, err := mapWords(filepath.Join(dir, feedingName))
	if err != nil {
		return &feeding{}, lineMark{}, err
	}
	f := &feeding{words: words, close: closeFn}
	return f, f.left(), nil
}

// openFeeding opens the record in the state directory, and returns the
// line the sidecar before left in it; without a state directory, or when
// the record cannot be made, no record is kept (a crash on a line then
// repeats after the restart, as before).
func (r *runner) openFeeding() (*feeding, lineMark) {
	if r.cfg.StateDir == "" {
		return &feeding{}, lineMark{}
	}
	f, left, err := openFeeding(r.cfg.StateDir)
	if err != nil {
		r.log.Error(err, "cannot keep the record of the line being fed; a line that crashes the sidecar will again after its restart")
	}
	if left.line != 0 {
		r.log.Info("the sidecar ended while feeding a line; that line counts as unparsed when it comes again", "line", left.line)
	}
	return f, left
}

// left is the mark in the record, when it checks out.
func (f *feeding) left() lineMark {
	n, fp, sum := atomic.LoadUint64(&f.words[0]), atomic.LoadUint64(&f.words[1]), atomic.LoadUint64(&f.words[2])
	if n == 0 || n > 1<<62 || sum != feedingSum(n, fp) {
		return lineMark{}
	}
	return lineMark{line: int(n), fp: fp}
}

// begin records that line n, of fingerprint fp, is being fed. The number
// goes in last: a record cut short by a kill holds none.
func (f *feeding) begin(n int, fp uint64) {
	if f.words == nil {
		return
	}
	atomic.StoreUint64(&f.words[0], 0)
	atomic.StoreUint64(&f.words[1], fp)
	atomic.StoreUint64(&f.words[2], feedingSum(uint64(n), fp))
	atomic.StoreUint64(&f.words[0], uint64(n))
}

// end records that the line was handled.
func (f *feeding) end() {
	if f.words != nil {
		atomic.StoreUint64(&f.words[0], 0)
	}
}

func (f *feeding) release() {
	if f.close != nil {
		_ = f.close()
	}
}

func feedingSum(n, fp uint64) uint64 { return mix(n ^ mix(fp^feedingSalt)) }

// lineFingerprint tells lines apart cheaply: their length, whether they were
// cut, and their first and last 64 bytes (the kubelet's timestamp
// included).
func lineFingerprint(data []byte, cut bool) uint64 {
	h := uint64(14695981039346656037)
	add := func(b []byte) {
		for _, c := range b {
			h = (h ^ uint64(c)) * 1099511628211
		}
	}
	add(data[:min(len(data), 64)])
	add(data[max(len(data)-64, 0):])
	h = mix(h ^ uint64(len(data)))
	if cut {
		h = mix(h + 1)
	}
	return h
}

// mix is the splitmix64 finalizer.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// crashHook, when set, runs before each line is fed: a build with the
// crashtest tag sets it (crashhook_crashtest.go), so that tests can crash
// the real binary on a line of their choosing. Release builds leave it nil.
var crashHook func(line []byte)
