//go:build !linux

package sidecar

import "net"

// newRcvQueue: watching the receive queue is Linux's (rcvlowat_linux.go);
// elsewhere the pace is slept out.
func newRcvQueue(net.Conn) rcvQueue { return nil }
