// turnwatch-hook prints the turnwatch nudges an agent has not seen yet, in
// the shape its CLI's hook protocol expects (docs/nudges.md). The sidecar
// puts it at /run/turnwatch/bin/turnwatch-hook; the agent CLI runs it as a
// hook, as the agent's own user. It remembers what it showed in a small
// state file next to the nudges. It never fails the CLI: whatever goes
// wrong, it says so on stderr and exits 0.
//
//	turnwatch-hook --cli claude|gemini|plain [--dir /run/turnwatch] [--block]
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}
