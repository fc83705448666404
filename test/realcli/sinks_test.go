//go:build realcli

package realcli

import (
	"fmt"
	"net"
	"strings"
	"sync"
)

// sinks record every attempt to reach something other than the scripted
// model: DNS queries (to any resolver: every address is local) and
// connections to the HTTP and HTTPS ports of any address.
type sinks struct {
	mu   sync.Mutex
	seen []string
}

func startSinks() (*sinks, error) {
	s := &sinks{}
	pc, err := net.ListenPacket("udp4", "0.0.0.0:53")
	if err != nil {
		return nil, err
	}
	go s.dns(pc)
	for _, port := range []string{"80", "443"} {
		ln, err := net.Listen("tcp4", "0.0.0.0:"+port)
		if err != nil {
			return nil, err
		}
		go s.tcp(ln)
	}
	return s, nil
}

// mark returns how many attempts were seen so far; since returns those after.
func (s *sinks) mark() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

func (s *sinks) since(mark int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen[mark:]...)
}

func (s *sinks) add(what string) {
	s.mu.Lock()
	s.seen = append(s.seen, what)
	s.mu.Unlock()
}

// dns records each query's name and refuses it at once, so a resolver does
// not wait out its timeout.
func (s *sinks) dns(pc net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, addr, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		q := buf[:n]
		s.add("dns " + dnsName(q))
		if n >= 12 {
			resp := append([]byte(nil), q...)
			resp[2] |= 0x80                  // a response
			resp[3] = (resp[3] & 0xf0) | 0x5 // REFUSED
			pc.WriteTo(resp, addr)
		}
	}
}

// dnsName reads the first question's name of a DNS query.
func dnsName(q []byte) string {
	var labels []string
	for i := 12; i < len(q); {
		l := int(q[i])
		if l == 0 || i+1+l > len(q) {
			break
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	return strings.Join(labels, ".")
}

func (s *sinks) tcp(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s.add(fmt.Sprintf("tcp %s", c.LocalAddr()))
		c.Close()
	}
}
