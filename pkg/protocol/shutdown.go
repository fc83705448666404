package protocol

import "time"

// What the sidecar does after SIGTERM, in the order it does it. The
// controller raises a turn's Pod termination grace to cover both (and a
// margin), so that the kubelet's SIGKILL never cuts the final summary: one
// definition for both sides, so neither can change it alone.
const (
	// SidecarDrain is how long the sidecar keeps reading the agent's output
	// after SIGTERM.
	SidecarDrain = 10 * time.Second
	// SidecarWriteGrace is how long its last writes may take after the drain.
	SidecarWriteGrace = 10 * time.Second
)
