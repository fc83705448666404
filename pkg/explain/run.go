package explain

import (
	"fmt"
	"io"
	"strings"

	"turnwatch.dev/turnwatch/pkg/quote"
)

// Turn is one turn of a run with its outcome, as the run's status and the
// AgentTurn tell it.
type Turn struct {
	Name     string `json:"name"`
	Attempt  int32  `json:"attempt"`
	Outcome  string `json:"outcome"` // "" while it runs
	Class    string `json:"class,omitempty"`
	Detector string `json:"detector,omitempty"`
	Message  string `json:"message,omitempty"`
	Steps    int64  `json:"steps"`
	CostUSD  string `json:"costUSD,omitempty"`
	Pod      string `json:"pod,omitempty"`
	// Notes are what the turn told besides its outcome: each nudge as its
	// Nudged Event says it (with delivered / not delivered) and the
	// sidecar's warnings (protocol.Warnings: DeltasHidden, HooksNotRun,
	// CostMismatch, FormatMismatch).
	Notes []string `json:"notes,omitempty"`
}

// Run is an AgentRun explained: its turns, then one turn's stream.
type Run struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Phase     string `json:"phase"`
	Fault     *Turn  `json:"fault,omitempty"` // class, detector, message and turn (Name) of the fault
	Turns     []Turn `json:"turns"`
	// StreamTurn names the turn whose stream follows; StreamError says why
	// there is none (its Pod or log is gone).
	StreamTurn  string    `json:"streamTurn,omitempty"`
	StreamError string    `json:"streamError,omitempty"`
	Stream      *Timeline `json:"stream,omitempty"`
	// Drill is set when the run is a drill: its scenario, what it
	// expected and its result.
	Drill *Drill `json:"drill,omitempty"`
	// Attached is set for an attached Pod's turn (docs/attach.md), which
	// has no AgentRun: Name is then the Pod's, and the headline names the
	// Pod and its owner.
	Attached *Attached `json:"attached,omitempty"`
}

// Attached is what an attached Pod's turn records of its Pod
// (AgentTurn spec.podRef).
type Attached struct {
	Format         string `json:"format"`
	AgentContainer string `json:"agentContainer"`
	// Owner is the Pod's controller ("Job/NAME"); empty for a Pod no one
	// controls.
	Owner string `json:"owner,omitempty"`
}

// subject is the headline's name of what is explained: the AgentRun, or
// the attached Pod with its owner.
func (r *Run) subject() string {
	a := r.Attached
	switch {
	case a == nil:
		return fmt.Sprintf("AgentRun %s/%s", r.Namespace, r.Name)
	case a.Owner != "":
		return fmt.Sprintf("Pod %s/%s (attached, owner %s)", r.Namespace, r.Name, a.Owner)
	}
	return fmt.Sprintf("Pod %s/%s (attached)", r.Namespace, r.Name)
}

// WriteText writes the run for a person: a headline, the turns, the stream.
// The messages and notes, which may quote the agent (or anyone who can
// write an Event in the namespace), are escaped (quote.Text).
func (r *Run) WriteText(w io.Writer, color bool) error {
	p := painter(color)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", r.subject(), p.s(styleBold, orDash(r.Phase)))
	if f := r.Fault; f != nil {
		fmt.Fprintf(&b, " %s", p.s(styleRed, fmt.Sprintf("(%s", f.Class)))
		if f.Detector != "" {
			fmt.Fprintf(&b, "%s", p.s(styleRed, ", "+f.Detector))
		}
		fmt.Fprintf(&b, "%s", p.s(styleRed, ")"))
		if f.Message != "" {
			fmt.Fprintf(&b, ": %s", quote.Text(f.Message))
		}
		if f.Name != "" {
			fmt.Fprintf(&b, " in turn %s", f.Name)
		}
	}
	b.WriteString("\n")
	if a := r.Attached; a != nil {
		fmt.Fprintf(&b, "format %s, agent container %s\n", orDash(a.Format), orDash(a.AgentContainer))
	}
	if d := r.Drill; d != nil {
		fmt.Fprintf(&b, "%s\n", p.s(styleYellow, d.headline()))
		if d.Note != "" {
			fmt.Fprintf(&b, "  note: %s\n", quote.Text(d.Note))
		}
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "%s\n", p.s(styleDim, fmt.Sprintf("  %-28s %-7s %-10s %-34s %5s  %s", "TURN", "ATTEMPT", "OUTCOME", "ERROR", "STEPS", "COST USD")))
	for _, t := range r.Turns {
		errText := "-"
		if t.Class != "" {
			errText = t.Class
			if t.Detector != "" {
				errText += " (" + t.Detector + ")"
			}
		}
		outcome := orDash(t.Outcome)
		if t.Outcome == "Failed" {
			outcome = p.s(styleRed, pad(outcome, 10))
		}
		fmt.Fprintf(&b, "  %-28s %-7d %s %-34s %5d  %s\n", t.Name, t.Attempt, pad(outcome, 10), errText, t.Steps, orDash(t.CostUSD))
		if t.Message != "" {
			fmt.Fprintf(&b, "  %-28s %s\n", "", p.s(styleDim, quote.Text(t.Message)))
		}
		for _, n := range t.Notes {
			fmt.Fprintf(&b, "  %-28s %s\n", "", p.s(styleYellow, quote.Text(n)))
		}
	}
	b.WriteString("\n")
	switch {
	case r.Stream != nil:
		fmt.Fprintf(&b, "%s\n", p.s(styleBold, fmt.Sprintf("turn %s, its agent's stream:", r.StreamTurn)))
	case r.StreamError != "":
		fmt.Fprintf(&b, "turn %s: no stream to show: %s\n", r.StreamTurn, quote.Text(r.StreamError))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if r.Stream != nil {
		return r.Stream.WriteText(w, color)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
