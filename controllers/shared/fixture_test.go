package shared

import (
	"turnwatch.dev/turnwatch/controllers/internal/fixture"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

// counts is steps and a cost as a turn's progress (fixture.Counts).
func counts[N int | int64](steps N, cost string) protocol.Progress {
	return fixture.Counts(steps, cost)
}
