package monitor

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
func parseOpencode(e *Engine, s *scanner, o *obj, typ []byte, ev *event) bool {
	switch string(typ) {
	case "step_start":
		// A step after the final result (or after an error) reopens the turn.
		ev.msgOpen, ev.start = true, !e.live
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
func opencodeRest(s *scanner, o *obj, ev *event) bool {
	for s.next(o) {
		if string(o.key) == "sessionID" {
			ev.sessionID = readSessionID(s)
		} else if !s.skip() {
			return false
		}
	}
	return !s.bad
}

// opencodeInto is s.into(o, name) that reads the top-level sessionID it
// passes on the way into ev.
func opencodeInto(s *scanner, o *obj, name string, ev *event) bool {
	for s.next(o) {
		switch k := o.key; {
		case len(k) == len(name) && string(k) == name:
			if s.object() {
				return true
			}
		case string(k) == "sessionID":
			ev.sessionID = readSessionID(s)
		default:
			s.skip()
		}
	}
	return false
}

func opencodePart(s *scanner, o *obj, typ string, ev *event) bool {
	var callID, tool, input, text, status, reason, answer []byte
	var cost Money
	hasCost := false
	for opencodeInto(s, o, "part", ev) {
		var p obj
		for s.next(&p) {
			switch string(p.key) {
			case "callID":
				callID, _ = s.str()
			case "tool":
				tool, _ = s.str()
			case "text":
				text, _ = s.textOrNull()
			case "reason":
				reason, _ = s.strOrNull()
			case "cost":
				cost, hasCost = readMoney(s)
			case "state":
				input, status, answer = readOpencodeState(s)
			default:
				s.skip()
			}
		}
	}
	if s.bad {
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
func opencodeError(s *scanner, o *obj, ev *event) bool {
	ev.final, ev.failed, ev.turnStop = true, true, StopError
	ev.setStop(StopError) // the open step ends with it
	var name, msg []byte
	for opencodeInto(s, o, "error", ev) {
		var eo obj
		for s.next(&eo) {
			switch string(eo.key) {
			case "name":
				name, _ = s.textOrNull()
			case "data":
				if !s.object() {
					continue
				}
				var d obj
				for s.find(&d, "message") {
					if s.peek() == '"' {
						msg, _ = s.text()
					} else {
						s.skip()
					}
				}
			default:
				s.skip()
			}
		}
	}
	ev.errText = msg
	if len(msg) == 0 {
		ev.errText = name
	}
	return !s.bad
}

func readOpencodeState(s *scanner) (input, status, answer []byte) {
	if !s.object() {
		return nil, nil, nil
	}
	var o obj
	for s.next(&o) {
		switch string(o.key) {
		case "input":
			input, _ = s.value()
		case "status":
			status, _ = s.str()
		case "output", "error": // the answer of a completed or failed tool
			answer, _ = s.value()
		default:
			s.skip()
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
