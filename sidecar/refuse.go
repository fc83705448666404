package sidecar

import (
	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/nudgefile"
)

// Calls remembers the tool calls the sidecar wrote a verdict on, for the
// agent's pre-tool hook (guards.refuse, docs/nudges.md). The zero value is
// ready; `turnwatch-sidecar watch` judges with it as the watchdog does.
type Calls struct {
	judged map[string]bool // by call id
	seen   map[string]int  // calls by tool name and arguments, for CallKey
	closed bool            // the CallAll verdict is written
}

// judgeCalls writes the sidecar's verdict on each call the line showed
// whole, for the agent's pre-tool hook. Called right after the Feed that
// read the line (Engine.Inspect).
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
	if c.judged == nil {
		c.judged, c.seen = map[string]bool{}, map[string]int{}
	}
	var vs []nudgefile.Verdict
	if parsed {
		for _, call := range eng.Inspect().Calls {
			if !call.Complete || call.ID == "" || c.judged[call.ID] {
				continue
			}
			c.judged[call.ID] = true
			sig := call.Name + "\x00" + call.Args
			c.seen[sig]++
			vs = append(vs, verdictOn(call.ID, nudgefile.CallKey(call.Name, []byte(call.Args), c.seen[sig]), trip))
		}
	}
	if trip != nil {
		vs = append(vs, verdictOn(nudgefile.CallAll, "", trip))
		c.closed = true
	}
	return vs
}

func verdictOn(call, key string, trip *monitor.Trip) nudgefile.Verdict {
	v := nudgefile.Verdict{Call: call, Key: key}
	if trip != nil {
		v.Refuse, v.Detector, v.Message = true, trip.Detector, trip.Message
	}
	return v
}
