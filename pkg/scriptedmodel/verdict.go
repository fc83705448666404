package scriptedmodel

// Exception is how a real CLI ends a scenario otherwise than the scenario's
// verdict says, found by running it (test/realcli, docs/agents.md).
type Exception struct {
	// Blind says why the CLI's stream cannot show what the scenario plays:
	// the turn ends as the CLI ends it, and no detector can see it.
	Blind string
	// Own is the text of the CLI's own guard, which ends the turn first; its
	// final result reports it as a failure (agent-error).
	Own string
}

// Exceptions holds, per format, the scenarios its CLI ends otherwise.
var Exceptions = map[string]map[string]Exception{
	"claude": {
		// Claude Code retries a max_tokens stop itself, then reports it failed.
		"lengthStop": {Own: "exceeded the 32000 output token maximum"},
	},
	"codex": {
		"whitespace": {Blind: "codex exec --json prints whole messages, no deltas: degeneration is blind (DeltasHidden)"},
		"lengthStop": {Own: "max_output_tokens"}, // "Incomplete response returned, reason: max_output_tokens"
	},
	"opencode": {
		"whitespace": {Blind: "opencode run --format json prints whole text parts, no deltas: degeneration is blind (DeltasHidden)"},
	},
	"gemini": {
		"whitespace": {Own: "Loop detected"}, // Gemini CLI's loop guard, on repeated chunks
		"repetition": {Own: "Loop detected"},
		"lengthStop": {Blind: "gemini's stream-json carries no finish reason: a MAX_TOKENS answer prints a success result"},
	},
}

// Verdict is what a turn of a CLI of format playing the scenario must get:
// the scenario's detector and class, or the CLI's own error ("", "agent-error")
// where its own guard ends it first, or nothing where its stream is blind.
func (s Scenario) Verdict(format string) (detector, class string, ex Exception) {
	ex = Exceptions[format][s.Name]
	switch {
	case ex.Blind != "":
		return "", "", ex
	case ex.Own != "":
		return "", "agent-error", ex
	}
	return s.Detector, s.Class, ex
}
