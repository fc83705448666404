package protocol

import "turnwatch.dev/turnwatch/pkg/monitor"

// Progress is a turn's own steps and cost so far: the one type for them from
// the sidecar's engine to the run's status. It is the message of
// ConditionProgress and the head of Summary. The API's statuses
// (api/v1alpha1) keep their own field types, steps an int64 and costUSD a
// decimal string; ParseProgress and CostUSD convert between the two.
type Progress struct {
	// Steps is the tool calls the turn started, as the engine counts them.
	Steps int64 `json:"steps"`
	// Cost is the turn's own cost, not its run's. Its JSON form is
	// monitor.Money's decimal string ("0.30").
	Cost monitor.Money `json:"costUSD"`
	// StreamCost is the cost the agent's stream reported, kept beside Cost
	// when the model gateway metered the turn (the engine's StreamCost);
	// absent otherwise.
	StreamCost monitor.Money `json:"streamCostUSD,omitempty"`
}

// ParseProgress reads steps and a cost as an API status holds them; an empty
// cost is zero. A cost that is not a decimal is an error: the caller decides
// whether such a report is dropped or counted as zero.
func ParseProgress(steps int64, costUSD string) (Progress, error) {
	if costUSD == "" {
		return Progress{Steps: steps}, nil
	}
	cost, err := monitor.ParseMoney(costUSD)
	if err != nil {
		return Progress{}, err
	}
	return Progress{Steps: steps, Cost: cost}, nil
}

// CostUSD is p's cost as an API status holds it.
func (p Progress) CostUSD() string { return p.Cost.String() }

// Add is p and q together: the run's totals are its turns' progress added up.
func (p Progress) Add(q Progress) Progress {
	return Progress{Steps: p.Steps + q.Steps, Cost: p.Cost.Add(q.Cost)}
}

// Behind says whether p counts less than was, in steps or in cost. Counts
// only grow within a turn: a report behind another is an older one (a
// restarted sidecar replaying its log from a checkpoint or the start), never
// a correction, and neither side takes it.
func (p Progress) Behind(was Progress) bool {
	return p.Steps < was.Steps || p.Cost < was.Cost
}

// Ahead says whether p moved past was and is nowhere behind it: a report
// worth writing.
func (p Progress) Ahead(was Progress) bool { return p != was && !p.Behind(was) }
