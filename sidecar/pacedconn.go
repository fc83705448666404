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
const (
	// logReadPace is the least time between two reads of a live log
	// stream's socket: a line waits at most about this long before the
	// sidecar sees it, so a trip shows at most this much later. It does not
	// slow a backlog down (a read that fills the buffer is followed by the
	// next at once), and a line after a quiet spell is read as soon as it
	// comes.
	logReadPace = 50 * time.Millisecond
	// logReadBuffer is how much one read of the socket may take: while
	// paced, at most logReadBuffer per logReadPace (1.3 MB/s); a faster
	// stream fills the buffer, and the pace no longer applies.
	logReadBuffer = 64 << 10
)

// pacedConn is a connection whose reads from the network are at least every
// apart, unless the previous one filled the buffer. Between network reads it
// serves what it holds. Writes pass through.
type pacedConn struct {
	net.Conn
	every time.Duration
	// clock reads the time and sleeps out the pace.
	clock clock.Clock
	// lowWater sets the socket's receive low-water mark (nil where the
	// platform has none): up after a read, back to one byte before the
	// next, so the packets of one pause wake nothing.
	lowWater func(int)
	raised   bool

	buf  []byte
	r, w int       // buf[r:w] is read from the network, not yet served
	last time.Time // when the last network read returned
	full bool      // it filled buf: more may be waiting
}

func newPacedConn(c net.Conn, every time.Duration, clk clock.Clock) *pacedConn {
	return &pacedConn{Conn: c, every: every, clock: clk, lowWater: lowWater(c),
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
	if wait := c.every - c.clock.Now().Sub(c.last); !c.full && wait > 0 {
		c.clock.Sleep(wait)
	}
	if c.raised {
		c.lowWater(1)
		c.raised = false
	}
	n, err := c.Conn.Read(c.buf)
	c.last, c.full = c.clock.Now(), n == len(c.buf)
	c.r, c.w = 0, n
	if n > 0 && !c.full && c.every > 0 && c.lowWater != nil {
		c.lowWater(len(c.buf))
		c.raised = true
	}
	if n == 0 {
		return err
	}
	return nil
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
