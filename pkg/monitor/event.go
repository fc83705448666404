package monitor

import "turnwatch.dev/turnwatch/pkg/monitor/internal/jsonscan"

// event is one input line normalized: what the format parsers extract and
// the fold consumes. Byte slices point into the line (raw, still escaped);
// nothing is copied. The engine reuses one event for every line.
type event struct {
	// Turn boundaries.
	start      bool // a start event: reopens the turn
	newSegment bool // costs reported from here on belong to a new session
	final      bool // the format's final result event

	// ignored marks a known line that carries nothing the detectors read
	// (a session header, a rate-limit or progress notice, an RPC reply, an
	// error notice): counted in the report's ignored, not in unparsed.
	ignored bool

	// sessionID is the CLI's own session id when this line names it (raw,
	// still escaped): claude system/init session_id, codex thread.started
	// thread_id, opencode's top-level sessionID, gemini init session_id, pi's
	// session header id. The engine keeps the first (Report.AgentSessionID).
	sessionID []byte

	// Model message boundaries.
	msgOpen   bool   // this line belongs to a model message (opens one if none)
	msgID     []byte // claude: a new id ends the open message first
	endBefore bool   // end the open message before this line's content (claude user/result, gemini tool_result)
	msgEnd    bool   // this line ends the model message

	// Deltas (text_delta / thinking_delta / gemini delta messages).
	delta     []byte
	hasDelta  bool
	deltaText bool // a text delta (not thinking): non-space text speaks

	// text is complete message text (codex agent_message, opencode text,
	// gemini non-delta message); non-space text speaks.
	text    []byte
	hasText bool
	// thinking is a complete thinking block (codex reasoning item,
	// opencode reasoning part): read for repetition, never speaking.
	thinking    []byte
	hasThinking bool

	// content is a raw JSON array of content blocks (pi, claude): tool calls,
	// text, tool results, read in order by the fold.
	content         []byte
	contentComplete bool // the calls in it carry complete arguments
	// contentStrs are the strings of content's text and thinking blocks
	// that the parser read on this line (positions in content): the fold
	// does not scan them again.
	contentStrs jsonscan.Spans

	// Single tool calls and results of the flat formats.
	calls    [2]callRef
	ncalls   int
	results  [2]resultRef
	nresults int

	// agent is the claude subagent that wrote this line (its
	// parent_tool_use_id, raw); nil for the main agent.
	agent []byte

	// Stop reason from a message end event, normalized ("" none seen).
	// weakStop marks one from a stream's message_delta (claude with partial
	// messages): the message's own line's stop reason, when set, wins.
	stop     string
	hasStop  bool
	weakStop bool
	// turnStop sets the stop reason directly (codex turn.failed, gemini
	// error result, opencode error); with stopByResult, the format's stop
	// reason is its final result's, and "" sets it too (codex and gemini
	// streams carry no stop reason: error when the result reports a
	// failure, else ""). lastStop is claude's result stop_reason: the last
	// message's when that message had none.
	turnStop     string
	stopByResult bool
	lastStop     string

	// The agent's own error text, raw (still escaped). failed marks a final
	// event that reports a failure; errHead and errText are its text (joined
	// with ": " when both are set). errNote is the text of an error event
	// that is not final (codex and gemini top-level error, a pi message that
	// stopped with an error): the failure's text when the final event names
	// none. failOnErrorStop makes a final event a failure when the turn's
	// stop reason is error (pi agent_end).
	failed           bool
	failOnErrorStop  bool
	errHead, errText []byte
	errNote          []byte
	// cliStop marks an error notice that, when only the final result
	// follows it, is the CLI stopping its own turn (gemini's loop guard):
	// the turn failed with the notice's text, and the line is not ignored.
	cliStop bool

	// Cost.
	costKind costKind
	cost     Money
	toks     tokens
	toksSet  tokenFields
	model    []byte
}

type callRef struct {
	id, name, args []byte
	complete       bool
}

type resultRef struct {
	id, name []byte
	isError  bool
	text     []byte // the answer, a raw JSON value or raw string contents (repeated errors, answerAware)
}

// costKind says how a cost report combines with what came before.
type costKind uint8

const (
	costNone        costKind = iota
	costMessage              // the open message's cost is now cost (pi partials/ends: replaced, not summed)
	costAdd                  // add cost (opencode step_finish)
	costSegment              // the session's whole cost is now cost (claude result total_cost_usd)
	costTokens               // the open message's token usage (claude), priced by model
	costTokensTotal          // the session's cumulative token usage (codex, gemini), priced by model
)

// tokenFields marks which token buckets a usage report carried, so a report
// with only output_tokens (claude message_delta) keeps the input count.
type tokenFields uint8

const (
	tokIn tokenFields = 1 << iota
	tokOut
	tokCacheRead
	tokCacheWrite
)

func (ev *event) addCall(id, name, args []byte, complete bool) {
	if ev.ncalls < len(ev.calls) {
		ev.calls[ev.ncalls] = callRef{id, name, args, complete}
		ev.ncalls++
	}
}

// addAnswer adds a tool result with its answer text.
func (ev *event) addAnswer(id, name []byte, isError bool, text []byte) {
	if ev.nresults < len(ev.results) {
		ev.results[ev.nresults] = resultRef{id, name, isError, text}
		ev.nresults++
	}
}

func (ev *event) setStop(s string) { ev.stop, ev.hasStop = s, true }
