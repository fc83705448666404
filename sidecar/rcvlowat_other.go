//go:build !linux

package sidecar

import "net"

// lowWater: pacing by the low-water mark is Linux's (rcvlowat_linux.go).
func lowWater(net.Conn) func(int) { return nil }
