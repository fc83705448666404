package sidecar

import (
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sockQueue is a TCP socket's receive queue as Linux lets it be watched: its
// receive low-water mark (SO_RCVLOWAT) and how many bytes it holds
// (SIOCINQ). Linux does not report the socket readable, nor wake the
// runtime's poller, before the mark's worth of bytes is queued; lowering the
// mark reports at once what is queued.
type sockQueue struct {
	conn net.Conn
	raw  syscall.RawConn
}

// newRcvQueue returns c's receive queue, or nil when c has no socket.
func newRcvQueue(c net.Conn) rcvQueue {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return &sockQueue{conn: c, raw: raw}
}

func (q *sockQueue) setLowWater(n int) {
	_ = q.raw.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, n)
	})
}

// await returns once n bytes are queued, or after d. It reads nothing: it
// waits in the runtime's poller, which the socket wakes only once its
// low-water mark's worth is queued (set it to n first), and the read
// deadline ends the wait. A socket that fails or ends with less than n
// queued is seen at the deadline.
func (q *sockQueue) await(n int, d time.Duration) {
	if err := q.conn.SetReadDeadline(time.Now().Add(d)); err != nil {
		return
	}
	defer func() { _ = q.conn.SetReadDeadline(time.Time{}) }()
	_ = q.raw.Read(func(fd uintptr) bool {
		v, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ)
		return err != nil || v >= n
	})
}
