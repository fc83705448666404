package sidecar

import (
	"net"
	"syscall"
	"testing"
)

// TestLowWater: the setter really sets the socket's SO_RCVLOWAT.
func TestLowWater(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	set := lowWater(c)
	if set == nil {
		t.Fatal("no low-water setter for a TCP connection")
	}
	for _, want := range []int{4096, 1} {
		set(want)
		raw, _ := c.(*net.TCPConn).SyscallConn()
		var got int
		_ = raw.Control(func(fd uintptr) { got, err = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT) })
		if err != nil || got != want {
			t.Errorf("SO_RCVLOWAT = %d (%v), want %d", got, err, want)
		}
	}
}
