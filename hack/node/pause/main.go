// Command pause is the sandbox ("pause") container of the local test node:
// it holds the Pod's namespaces open, reaps any child that is re-parented to
// it, and exits cleanly on SIGTERM or SIGINT. containerd's sandbox_image names
// the image built from it (hack/image.sh), so the node needs no registry.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every exited child so none stays a zombie.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
