package scriptedmodel

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"turnwatch.dev/turnwatch/pkg/modelapi"
)

// serveTest serves a server playing scenario on loopback, as the sidecar
// does, and returns it and its address.
func serveTest(t *testing.T, scenario string, o Options) (*Server, string) {
	t.Helper()
	sc, err := Lookup(scenario)
	if err != nil {
		t.Fatal(err)
	}
	o.Scenario = sc
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs, _ := srv.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return srv, ln.Addr().String()
}

// rawRequest sends text on a new connection to addr and returns the
// status line of the answer.
func rawRequest(t *testing.T, addr, text string) string {
	t.Helper()
	c, err := net.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, text); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("no answer to %q: %v", text, err)
	}
	return strings.TrimSpace(line)
}

// TestNoProxy: an agent that asks the model to reach another host, by
// CONNECT or by an absolute URI on any path the model serves, gets an
// error, and the host named sees no connection.
func TestNoProxy(t *testing.T) {
	target, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	var dialed atomic.Int32
	go func() {
		for {
			c, err := target.Accept()
			if err != nil {
				return
			}
			dialed.Add(1)
			c.Close()
		}
	}()
	to := target.Addr().String()
	srv, addr := serveTest(t, "healthy", Options{})
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"name":"Bash"}]}`
	tests := map[string]string{
		"CONNECT":           "CONNECT " + to + " HTTP/1.1\r\nHost: " + to + "\r\n\r\n",
		"absolute GET":      "GET http://" + to + "/ HTTP/1.1\r\nHost: " + to + "\r\n\r\n",
		"absolute POST API": fmt.Sprintf("POST http://%s/v1/messages HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", to, to, len(body), body),
		"absolute https":    "GET https://" + to + "/v1/messages HTTP/1.1\r\nHost: " + to + "\r\n\r\n",
	}
	for name, req := range tests {
		t.Run(name, func(t *testing.T) {
			status := rawRequest(t, addr, req)
			if !strings.Contains(status, " 405 ") {
				t.Errorf("answered %q", status)
			}
		})
	}
	time.Sleep(100 * time.Millisecond) // a dial would have landed by now
	if n := dialed.Load(); n != 0 {
		t.Errorf("the host named was dialed %d times", n)
	}
	if main, side, _ := srv.Served(); main != 0 || side != 0 {
		t.Errorf("a proxy request was served: %d main, %d side", main, side)
	}
}

// TestRequestsWaitTheirTurn: past MaxRequests, a request waits until one
// ends; none is lost.
func TestRequestsWaitTheirTurn(t *testing.T) {
	srv, addr := serveTest(t, "stall", Options{MaxRequests: 1, Pause: 300 * time.Millisecond})
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"Bash"}]}`
	start := time.Now()
	done := make(chan error, 2)
	for range 2 {
		go func() {
			resp, err := http.Post("http://"+addr+"/v1/messages", "application/json", strings.NewReader(body))
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			done <- err
		}()
	}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if el := time.Since(start); el < 600*time.Millisecond {
		t.Errorf("two paused answers took %v with one slot: they ran at once", el)
	}
	if main, _, _ := srv.Served(); main != 2 {
		t.Errorf("served %d", main)
	}
}

// TestConnectionsAreBounded: past MaxConns open connections (here each
// holding a header it never finishes), the next waits for a slot.
func TestConnectionsAreBounded(t *testing.T) {
	_, addr := serveTest(t, "healthy", Options{})
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range modelapi.MaxConns {
		c, err := net.Dial("tcp4", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "POST /v1/messages HTTP/1.1\r\n") // and never the rest
		conns = append(conns, c)
	}
	// One more is accepted by the kernel but not served until a slot frees.
	extra, err := net.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	io.WriteString(extra, "GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n")
	extra.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := bufio.NewReader(extra).ReadString('\n'); err == nil {
		t.Fatal("a connection past MaxConns was served")
	}
	conns[0].Close()
	extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := bufio.NewReader(extra).ReadString('\n'); err != nil || !strings.Contains(line, "404") {
		t.Fatalf("after a slot freed: %q, %v", line, err)
	}
}

func TestServed(t *testing.T) {
	const tools = `"tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}]`
	fresh := `{"model":"m","messages":[{"role":"user","content":"do it"}],` + tools + `}`
	continued := `{"model":"m","messages":[{"role":"user","content":"do it"},{"role":"assistant","content":"done"},{"role":"user","content":"again"}],` + tools + `}`
	side := `{"model":"m","messages":[{"role":"user","content":"a title"}]}`
	tests := []struct {
		name        string
		bodies      []string
		main, sides int
		fresh       bool
	}{
		{"fresh, then a title", []string{fresh, side, continued}, 2, 1, true},
		{"continued first", []string{side, continued, fresh}, 2, 1, false},
		{"nothing served", []string{side, `not json`}, 0, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, addr := serveTest(t, "healthy", Options{MaxLog: 1})
			for _, b := range tt.bodies {
				resp, err := http.Post("http://"+addr+"/v1/messages", "application/json", strings.NewReader(b))
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			main, sides, fresh := srv.Served()
			if main != tt.main || sides != tt.sides || fresh != tt.fresh {
				t.Errorf("served %d main, %d side, fresh %v; want %d, %d, %v", main, sides, fresh, tt.main, tt.sides, tt.fresh)
			}
			if log := srv.Requests(); len(log) != 1 || log[0].Seq != len(tt.bodies) {
				t.Errorf("the log kept %+v, want the last of %d", log, len(tt.bodies))
			}
		})
	}
}

// TestSlowBodyIsCut: a request whose body never comes is answered with an
// error once bodyTimeout passed, and frees its slot.
func TestSlowBodyIsCut(t *testing.T) {
	was := bodyTimeout
	bodyTimeout = 200 * time.Millisecond
	defer func() { bodyTimeout = was }()
	_, addr := serveTest(t, "healthy", Options{MaxRequests: 1})
	start := time.Now()
	status := rawRequest(t, addr, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	if !strings.Contains(status, " 413 ") || time.Since(start) > 3*time.Second {
		t.Errorf("answered %q after %v", status, time.Since(start))
	}
	if status := rawRequest(t, addr, "GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n"); !strings.Contains(status, " 404 ") {
		t.Errorf("the next request: %q", status)
	}
}
