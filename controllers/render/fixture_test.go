package render

import "turnwatch.dev/turnwatch/controllers/internal/fixture"

// The fixtures the tests build from (controllers/internal/fixture).
var (
	newRun = fixture.Run
	envOf  = fixture.EnvOf
)
