package monitor

import "turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"

// opencode run --format json (sst/opencode packages/opencode/src/cli/cmd/
// run.ts): one line per finished part, {"type", "timestamp", "sessionID",
// "part"}: step_start, text (a finished text part), reasoning (with
// --thinking), tool_use (a tool part once completed or errored: call and
// result in one event), step_finish (reason, per-step cost and tokens),
// and error.
//
// A model message is step_start .. step_finish; a step_finish with reason
// "stop" is the final result event. Cost is used as reported, per step.
// Every line's top-level sessionID is the CLI's own session id (the part's
// own sessionID is not read).
func parseOpencode(c *parseContext, s *jsonscan.Scanner, o *jsonscan.Obj, typ []byte) bool {
	ev := c.ev
	switch string(typ) {
	case "step_start":
		// A step after the final result (or after an error) reopens the turn.
		ev.msgOpen, ev.start = true, !c.turnOpen
	case "text", "reasoning", "tool_use", "step_finish":
		return opencodePart(s, o, string(typ), ev)
	case "error":
		return opencodeError(s, o, ev)
	default:
		return false
	}
	return opencodeRest(s, o, ev)
}

// opencodeRest is s.skipRest(o) that reads the top-level sessionID.
func opencodeRest(s *jsonscan.Scanner, o *jsonscan.Obj, ev *event) bool {
	for s.Next(o) {
		if string(o.Key) == "sessionID" {
			ev.sessionID = readSessionID(s)
		} else if !s.Skip() {
			return false
		}
	}
	return !s.Bad
}

// opencodeInto is s.into(o, name) that reads the top-level sessionID it
// passes on the way into ev.
func opencodeInto(s *jsonscan.Scanner, o *jsonscan.Obj, name string, ev *event) bool {
	for s.Next(o) {
		switch k := o.Key; {
		case len(k) == len(name) && string(k) == name:
			if s.Object() {
				return true
			}
		case string(k) == "sessionID":
			ev.sessionID = readSessionID(s)
		default:
			s.Skip()
		}
	}
	return false
}

func opencodePart(s *jsonscan.Scanner, o *jsonscan.Obj, typ string, ev *event) bool {
	var callID, tool, input, text, status, reason, answer []byte
	var cost Money
	hasCost := false
	for opencodeInto(s, o, "part", ev) {
		var p jsonscan.Obj
		for s.Next(&p) {
			switch string(p.Key) {
			case "callID":
				callID, _ = s.Str()
			case "tool":
				tool, _ = s.Str()
			case "text":
				text, _ = s.TextOrNull()
			case "reason":
				reason, _ = s.StrOrNull()
			case "cost":
				cost, hasCost = readMoney(s)
			case "state":
				input, status, answer = readOpencodeState(s)
			default:
				s.Skip()
			}
		}
	}
	if s.Bad {
		return false
	}
	ev.msgOpen = true
	switch typ {
	case "text":
		ev.text, ev.hasText = text, true
	case "reasoning": // a whole thinking block of the step
		ev.thinking, ev.hasThinking = text, true
	case "tool_use":
		ev.addCall(callID, tool, input, true)
		if string(status) == "completed" || string(status) == "error" {
			ev.addAnswer(callID, tool, string(status) == "error", answer)
		}
	case "step_finish":
		ev.msgEnd = true
		if hasCost {
			ev.costKind, ev.cost = costAdd, cost
		}
		if reason != nil {
			ev.setStop(opencodeStop(reason))
		}
		ev.final = string(reason) == "stop"
	}
	return true
}

// opencodeError reads a session error, {"error":{"name":..,"data":{"message":..}}}:
// the run is over and it failed. Its text is data.message, else the name.
func opencodeError(s *jsonscan.Scanner, o *jsonscan.Obj, ev *event) bool {
	ev.final, ev.failed, ev.turnStop = true, true, StopError
	ev.setStop(StopError) // the open step ends with it
	var name, msg []byte
	for opencodeInto(s, o, "error", ev) {
		var eo jsonscan.Obj
		for s.Next(&eo) {
			switch string(eo.Key) {
			case "name":
				name, _ = s.TextOrNull()
			case "data":
				if !s.Object() {
					continue
				}
				var d jsonscan.Obj
				for s.Find(&d, "message") {
					if s.Peek() == '"' {
						msg, _ = s.Text()
					} else {
						s.Skip()
					}
				}
			default:
				s.Skip()
			}
		}
	}
	ev.errText = msg
	if len(msg) == 0 {
		ev.errText = name
	}
	return !s.Bad
}

func readOpencodeState(s *jsonscan.Scanner) (input, status, answer []byte) {
	if !s.Object() {
		return nil, nil, nil
	}
	var o jsonscan.Obj
	for s.Next(&o) {
		switch string(o.Key) {
		case "input":
			input, _ = s.Value()
		case "status":
			status, _ = s.Str()
		case "output", "error": // the answer of a completed or failed tool
			answer, _ = s.Value()
		default:
			s.Skip()
		}
	}
	return input, status, answer
}

// opencodeStop normalizes an AI SDK finish reason.
func opencodeStop(b []byte) string {
	switch string(b) {
	case "stop":
		return StopEnd
	case "tool-calls":
		return StopToolUse
	case "length":
		return StopLength
	case "error", "content-filter":
		return StopError
	}
	return ""
}

// sniffOpencode says whether a line is opencode's, for auto (format.go):
// its tool_use carries "part".
func sniffOpencode(typ string, line []byte) bool {
	switch typ {
	case "step_start", "step_finish", "text", "reasoning":
		return true
	case "tool_use":
		return topHas(line, "part")
	}
	return false
}
