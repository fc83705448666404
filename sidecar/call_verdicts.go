package sidecar

import (
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/nudgefile"
)

const (
	// maxJudged bounds what Calls remembers: the ids of the calls it judged
	// (a restated call is judged once) and, per tool name and arguments,
	// how many calls came (CallKey's n). Past it the oldest go: a call
	// restated after 4096 others gets a second line, and a signature not
	// seen for 4096 others counts from 1 again, so its later calls' hooks
	// find no line and let them run after refuseWait.
	maxJudged = 4096
	// maxCallText bounds the id and the tool name a verdict carries, as
	// the stream spells them: a call whose id or name is longer (no real
	// CLI's is) gets no line of its own; the * line covers it after a trip.
	maxCallText = 256
)

// Calls remembers the tool calls the sidecar wrote a verdict on, for the
// agent's pre-tool hook (guards.refuse, docs/nudges.md). It keeps ids and
// arguments as digests, at most maxJudged of each, so its memory is flat
// whatever the calls' size and number. The zero value is ready;
// `turnwatch-sidecar watch` judges with it as the watchdog does, and the
// watchdog's checkpoint carries its State.
type Calls struct {
	judged fifoCounts // call ids (IDSum) judged
	seen   fifoCounts // calls by signature (tool name and arguments), for CallKey's n
	closed bool       // the CallAll verdict is written
}

// CallsState is what Calls remembers, oldest first, for the checkpoint.
type CallsState struct {
	Judged []uint64   `json:"judged,omitempty"`
	Seen   []SigCount `json:"seen,omitempty"`
	Closed bool       `json:"closed,omitempty"`
}

// SigCount is how many calls with one signature came.
type SigCount struct {
	Sig uint64 `json:"sig"`
	N   int    `json:"n"`
}

// judgeCalls writes the sidecar's verdict on each call the line showed
// whole, for the agent's pre-tool hook. Called right after the Feed that
// read the line (Engine.LineCalls).
func (r *runner) judgeCalls(eng *monitor.Engine, trip *monitor.Trip, parsed bool) {
	if !r.cfg.Guards.Refuses() {
		return
	}
	if vs := r.calls.Judge(eng, trip, parsed); len(vs) > 0 {
		if err := nudgefile.AppendVerdicts(r.cfg.NudgeDir, vs); err != nil {
			r.log.Error(err, "cannot write the verdicts for the agent's hook (its calls run after refuseWait)")
		}
	}
}

// Judge is the verdict on each call the line showed whole, before the CLI
// runs it: refused when the line tripped, else let through. After a trip,
// one CallAll line refuses every call not judged yet, and nothing follows.
func (c *Calls) Judge(eng *monitor.Engine, trip *monitor.Trip, parsed bool) []nudgefile.Verdict {
	if c.closed {
		return nil
	}
	var vs []nudgefile.Verdict
	if parsed {
		eng.LineCalls(func(call monitor.LineCallRef) {
			if v, ok := c.judge(call, trip); ok {
				vs = append(vs, v)
			}
		})
	}
	if trip != nil {
		vs = append(vs, verdictOn(nudgefile.CallAll, "", trip))
		c.closed = true
	}
	return vs
}

// judge counts a whole call not judged yet and returns its verdict, when
// its id and tool name are short enough to name it.
func (c *Calls) judge(call monitor.LineCallRef, trip *monitor.Trip) (nudgefile.Verdict, bool) {
	if !call.Complete() || !call.HasID() {
		return nudgefile.Verdict{}, false
	}
	id := call.IDSum()
	if _, ok := c.judged.get(id); ok {
		return nudgefile.Verdict{}, false
	}
	c.judged.put(id, 1)
	args, sig := call.Digest()
	n, _ := c.seen.get(sig)
	c.seen.put(sig, n+1)
	callID, idOK := call.ID(maxCallText)
	name, nameOK := call.Name(maxCallText)
	if !idOK || !nameOK {
		return nudgefile.Verdict{}, false
	}
	return verdictOn(callID, nudgefile.KeyOf(name, args, n+1), trip), true
}

// State is what c remembers, for the checkpoint.
func (c *Calls) State() CallsState {
	s := CallsState{Closed: c.closed}
	c.judged.each(func(k uint64, _ int) { s.Judged = append(s.Judged, k) })
	c.seen.each(func(k uint64, n int) { s.Seen = append(s.Seen, SigCount{Sig: k, N: n}) })
	return s
}

// Restore makes c remember what s holds (a checkpoint's State), in place
// of what it did; past maxJudged entries the oldest are dropped.
func (c *Calls) Restore(s CallsState) {
	*c = Calls{closed: s.Closed}
	for _, k := range s.Judged {
		c.judged.put(k, 1)
	}
	for _, sc := range s.Seen {
		c.seen.put(sc.Sig, sc.N)
	}
}

func verdictOn(call, key string, trip *monitor.Trip) nudgefile.Verdict {
	v := nudgefile.Verdict{Call: call, Key: key}
	if trip != nil {
		v.Refuse, v.Detector, v.Message = true, trip.Detector, trip.Message
	}
	return v
}

// fifoCounts maps digests to counts, at most maxJudged of them: past it
// the first added goes first (an update does not make it younger).
type fifoCounts struct {
	m    map[uint64]int
	ring []uint64 // keys in the order added, from next once full
	next int
}

func (l *fifoCounts) get(k uint64) (int, bool) {
	n, ok := l.m[k]
	return n, ok
}

func (l *fifoCounts) put(k uint64, n int) {
	if l.m == nil {
		l.m = map[uint64]int{}
	}
	if _, ok := l.m[k]; ok {
		l.m[k] = n
		return
	}
	if len(l.ring) < maxJudged {
		l.ring = append(l.ring, k)
	} else {
		delete(l.m, l.ring[l.next])
		l.ring[l.next] = k
		l.next = (l.next + 1) % maxJudged
	}
	l.m[k] = n
}

// each calls fn with each key and count, oldest first.
func (l *fifoCounts) each(fn func(k uint64, n int)) {
	for i := range l.ring {
		k := l.ring[(l.next+i)%len(l.ring)]
		fn(k, l.m[k])
	}
}
