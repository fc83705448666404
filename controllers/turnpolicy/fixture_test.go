package turnpolicy

import "turnwatch.dev/turnwatch/controllers/internal/fixture"

// The fixtures the tests build from (controllers/internal/fixture).
var (
	newRun      = fixture.Run
	containsAll = fixture.ContainsAll
	t0          = fixture.T0
	usd         = fixture.USD
)
