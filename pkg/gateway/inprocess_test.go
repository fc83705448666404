package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// TestInProcess checks a handler served in process gets a request as a
// server reads one, and its answer streams: the first write is read before
// the handler returns, and closing the body ends the handler's request.
func TestInProcess(t *testing.T) {
	wrote, gone := make(chan struct{}), make(chan struct{})
	var seen *http.Request
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r
		w.Header().Set("X-Answer", "1")
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "first\n")
		close(wrote)
		<-r.Context().Done()
		close(gone)
	})
	req, _ := http.NewRequest("POST", "http://upstream.invalid/v1/messages?alt=sse", strings.NewReader("body"))
	resp, err := InProcess(h).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "first\n" || resp.StatusCode != http.StatusAccepted || resp.Header.Get("X-Answer") != "1" {
		t.Fatalf("read %q %v, status %d, header %v", line, err, resp.StatusCode, resp.Header)
	}
	<-wrote
	if seen.URL.IsAbs() || seen.RequestURI != "/v1/messages?alt=sse" || seen.Host != "upstream.invalid" {
		t.Errorf("the handler got %s %q host %q", seen.URL, seen.RequestURI, seen.Host)
	}
	resp.Body.Close()
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("closing the body did not end the handler's request")
	}
}

// TestStreamsAsItComes checks the gateway passes each chunk as the model
// sends it: the stall scenario's first deltas arrive while the model
// pauses mid-message, and the answer the agent gave up is unmetered.
func TestStreamsAsItComes(t *testing.T) {
	sc, _ := scriptedmodel.Lookup("stall")
	model, err := scriptedmodel.New(scriptedmodel.Options{Scenario: sc, Pause: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	up, _ := url.Parse("http://model.invalid")
	g, err := New(Options{Upstream: up, Transport: InProcess(model)})
	if err != nil {
		t.Fatal(err)
	}
	gs := httptest.NewServer(g)
	defer gs.Close()
	for _, req := range requests {
		resp, err := http.Post(gs.URL+req.path, "application/json", strings.NewReader(fmt.Sprintf(req.body, "true")))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() && !strings.Contains(sc.Text(), "Let me look at ") {
		}
		if sc.Err() != nil {
			t.Fatalf("%s: %v", req.api, sc.Err())
		}
		resp.Body.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for g.Counts().Unmetered != int64(len(requests)) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if c := g.Counts(); c.Unmetered != int64(len(requests)) {
		t.Errorf("counts %+v", c)
	}
}
