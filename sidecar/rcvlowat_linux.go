package sidecar

import (
	"net"
	"syscall"
)

// lowWater returns a setter of the socket's receive low-water mark
// (SO_RCVLOWAT), or nil when c has no socket. Linux does not report a TCP
// socket readable, nor wake the runtime's poller, before that many bytes
// are queued, and lowering the mark reports at once what is queued.
func lowWater(c net.Conn) func(int) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return func(n int) {
		_ = raw.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, n)
		})
	}
}
