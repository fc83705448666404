package sidecar

import (
	"context"
	"net"
	"time"

	"k8s.io/utils/clock"
)

// The log stream is read in batches. The kubelet flushes every line the agent
// writes, and the API server relays each flush as its own write, so a stream
// read as it comes wakes the sidecar once per line: at 100 lines a second
// that waking (the scheduler, the runtime's monitor thread, the HTTP/2 read
// loop and the hand-offs between goroutines) cost about 25 times what the
// engine spends on the lines (docs/performance.md, "Sidecar footprint"). So
// the log's connection speaks HTTP/1.1, where the goroutine that follows the
// log reads the socket itself, and while the stream is live that socket is
// read at most once per logReadPace: whatever the agent wrote meanwhile comes
// in one read. Between two reads the socket's low-water mark is raised, so
// the packets that arrive do not wake the runtime's poller either.
//
// The pace saves waking up for a trickle; it must never hold back a flood.
// A read that comes back short of the buffer does not tell which it is: in
// a flood the sender refills the socket a moment after each read, and half
// the reads were short; sleeping out the pace after each of them read a
// 98 MB backlog at 2 MB/s (issue 32). So the pace is not slept: the
// follower waits until the pace is over or a full buffer's worth is queued,
// whichever comes first. The low-water mark makes that wait free: the
// socket wakes the poller only once that much is there.
const (
	// logReadPace is the least time between two reads of a live log
	// stream's socket while less than logReadBuffer waits in it: a line
	// waits at most about this long before the sidecar sees it, so a trip
	// shows at most this much later. It does not slow a backlog down (a
	// full buffer's worth is read at once), and a line after a quiet spell
	// is read as soon as it comes.
	logReadPace = 50 * time.Millisecond
	// logReadBuffer is how much one read of the socket may take, and how
	// much must be queued to end the pace early: a stream slower than
	// logReadBuffer per logReadPace (1.3 MB/s) is read once per pace, a
	// faster one each time logReadBuffer has come.
	logReadBuffer = 64 << 10
)

// rcvQueue is a socket's receive queue, where the platform lets it be
// watched (Linux: rcvlowat_linux.go).
type rcvQueue interface {
	// setLowWater sets how many bytes must be queued before the socket
	// wakes a reader.
	setLowWater(n int)
	// await returns once n bytes are queued, or after d, without reading.
	await(n int, d time.Duration)
}

// pacedConn is a connection whose reads from the network are at least every
// apart, unless the previous one filled the buffer or a full buffer's worth
// is waiting. Between network reads it serves what it holds. Writes pass
// through.
type pacedConn struct {
	net.Conn
	every time.Duration
	// clock reads the time, and sleeps out the pace where the socket
	// cannot be watched.
	clock clock.Clock
	// queue watches the socket's receive queue (nil where the platform
	// cannot): its low-water mark is up after a short read and back to one
	// byte before the next, so the packets of one pause wake nothing until
	// a full buffer's worth has come.
	queue  rcvQueue
	raised bool

	buf  []byte
	r, w int       // buf[r:w] is read from the network, not yet served
	last time.Time // when the last network read returned
	full bool      // it filled buf: more may be waiting
}

func newPacedConn(c net.Conn, every time.Duration, clk clock.Clock) *pacedConn {
	return &pacedConn{Conn: c, every: every, clock: clk, queue: newRcvQueue(c),
		buf: make([]byte, logReadBuffer)}
}

func (c *pacedConn) Read(p []byte) (int, error) {
	if c.r == c.w {
		if err := c.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, c.buf[c.r:c.w])
	c.r += n
	return n, nil
}

// fill waits out the pace and reads the network once. An error that comes
// with data is not returned: the next read brings it again.
func (c *pacedConn) fill() error {
	c.pause()
	if c.raised {
		c.queue.setLowWater(1)
		c.raised = false
	}
	n, err := c.Conn.Read(c.buf)
	c.last, c.full = c.clock.Now(), n == len(c.buf)
	c.r, c.w = 0, n
	if n > 0 && !c.full && c.every > 0 && c.queue != nil {
		c.queue.setLowWater(len(c.buf))
		c.raised = true
	}
	if n == 0 {
		return err
	}
	return nil
}

// pause waits before a network read: not after a full read, else until the
// pace since the last read is over or, where the socket can be watched, a
// full buffer's worth is queued.
func (c *pacedConn) pause() {
	wait := c.every - c.clock.Now().Sub(c.last)
	switch {
	case c.full || wait <= 0:
	case c.raised:
		c.queue.await(len(c.buf), wait)
	default:
		c.clock.Sleep(wait)
	}
}

// pacedDialer dials TCP as client-go does by default and paces the
// connection's reads on clk.
func pacedDialer(every time.Duration, clk clock.Clock) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return newPacedConn(c, every, clk), nil
	}
}
