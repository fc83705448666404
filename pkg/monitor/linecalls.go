package monitor

// The tool calls of the line the engine parsed last, for the sidecar's
// verdict on each (docs/nudges.md#refusing-the-tripping-call). Unlike
// Inspect, nothing is copied: a call's arguments may be most of a 16 MiB
// line, and the sidecar keeps only their digest.

// LineCallRef is a tool call of the line parsed last. It points into the
// line: use it within the LineCalls callback only.
type LineCallRef struct {
	id, name, args []byte
	complete       bool
}

// Complete is false for a call whose arguments are still streaming.
func (c LineCallRef) Complete() bool { return c.complete }

// HasID says whether the stream names the call by an id.
func (c LineCallRef) HasID() bool { return len(c.id) > 0 }

// IDSum identifies the call's id as the engine does: any spelling of one
// id (escapes) gives the same sum.
func (c LineCallRef) IDSum() uint64 { return idHash(c.id) }

// ID is the call's id, decoded, when the stream spells it in at most max
// bytes; else "" and false.
func (c LineCallRef) ID(max int) (string, bool) { return shortText(c.id, max) }

// Name is the tool's name, decoded, when the stream spells it in at most
// max bytes; else "" and false.
func (c LineCallRef) Name(max int) (string, bool) { return shortText(c.name, max) }

// Digest is ArgsDigest of the call's arguments and the call's signature
// (tool name and arguments, as identicalCalls compares calls).
func (c LineCallRef) Digest() (args, sig uint64) {
	args = ArgsDigest(c.args)
	return args, combine(hashString(c.name), args)
}

func shortText(raw []byte, max int) (string, bool) {
	if len(raw) > max {
		return "", false
	}
	return unescape(raw), true
}

// LineCalls calls fn with each tool call of the line the engine parsed
// last, as Inspect lists them, without allocating. Call it right after the
// Feed that parsed the line, as Inspect.
func (e *Engine) LineCalls(fn func(LineCallRef)) {
	ev := &e.ev
	if ev.content != nil {
		eachContentItem(ev.content, func(it contentItem) {
			if it.call {
				fn(LineCallRef{id: it.id, name: it.name, args: it.args, complete: ev.contentComplete})
			}
		})
	}
	for _, c := range ev.calls[:ev.ncalls] {
		fn(LineCallRef{id: c.id, name: c.name, args: c.args, complete: c.complete})
	}
}
