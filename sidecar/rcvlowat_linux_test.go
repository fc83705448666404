package sidecar

import (
	"net"
	"syscall"
	"testing"
	"time"
)

// tcpPair is a connected loopback TCP pair: the client's end and the
// server's.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return c, s
}

// TestLowWater: the setter really sets the socket's SO_RCVLOWAT.
func TestLowWater(t *testing.T) {
	c, _ := tcpPair(t)
	q := newRcvQueue(c)
	if q == nil {
		t.Fatal("no receive queue for a TCP connection")
	}
	for _, want := range []int{4096, 1} {
		q.setLowWater(want)
		raw, _ := c.(*net.TCPConn).SyscallConn()
		var got int
		var err error
		_ = raw.Control(func(fd uintptr) { got, err = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT) })
		if err != nil || got != want {
			t.Errorf("SO_RCVLOWAT = %d (%v), want %d", got, err, want)
		}
	}
}

// TestAwaitQueue: a wait for a buffer's worth ends when it has come, not at
// the deadline, and a few bytes do not end it; nothing is read meanwhile,
// and the connection reads as before once the wait is over.
func TestAwaitQueue(t *testing.T) {
	const n = logReadBuffer
	c, s := tcpPair(t)
	q := newRcvQueue(c)
	q.setLowWater(n)
	if _, err := s.Write(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	q.await(n, 100*time.Millisecond)
	if waited := time.Since(start); waited < 90*time.Millisecond {
		t.Errorf("with 100 bytes queued the wait for %d ended after %s, before its deadline", n, waited)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		_, _ = s.Write(make([]byte, n))
	}()
	start = time.Now()
	q.await(n, time.Minute)
	if waited := time.Since(start); waited > 30*time.Second {
		t.Errorf("the wait for %d bytes lasted %s after they came", n, waited)
	}
	q.setLowWater(1)
	buf := make([]byte, 2*n)
	got := 0
	for got < n+100 {
		m, err := c.Read(buf[got:])
		if err != nil {
			t.Fatalf("read after the wait: %v", err)
		}
		got += m
	}
}
