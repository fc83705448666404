package gateway

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// gatedBody hands the transport a request body's bytes at once, but holds
// its read past the last of them (where the transport looks for the EOF)
// until released: the moment the server answering the agent has sent the
// answer's headers, as a busy machine schedules it.
type gatedBody struct {
	io.ReadCloser
	left     int64
	released <-chan struct{}
}

func (b *gatedBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		<-b.released
	}
	n, err := b.ReadCloser.Read(p[:min(int64(len(p)), max(b.left, 1))])
	b.left -= int64(n)
	return n, err
}

// A streamed answer passes whole while the request's body is still being
// read to its end: the server answering the agent must not close that body
// when the answer's headers go out (it does, unless full duplex), or the
// transport, reading it, fails and closes the upstream's connection mid-
// answer. Seen on the node as gemini's "[API Error: terminated]".
func TestAnswerOutlivesTheRequestBody(t *testing.T) {
	released := make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"a\":1}\n\n")
		w.(http.Flusher).Flush()
		<-released
		time.Sleep(100 * time.Millisecond) // the transport reads the body's end meanwhile
		_, _ = io.WriteString(w, "data: {\"b\":2}\n\n")
	}))
	defer upstream.Close()
	u, _ := url.Parse(upstream.URL)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	g, err := New(Options{Upstream: u, Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r.Body = &gatedBody{ReadCloser: r.Body, left: r.ContentLength, released: released}
		return tr.RoundTrip(r)
	})})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs, _ := g.Serve(ln)
	defer hs.Close()

	resp, err := http.Post("http://"+ln.Addr().String()+"/elsewhere", "application/json", strings.NewReader(`{"contents":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	close(released)
	got, err := io.ReadAll(resp.Body)
	if want := "data: {\"a\":1}\n\ndata: {\"b\":2}\n\n"; err != nil || string(got) != want {
		t.Errorf("the answer: %q, %v; want %q whole", got, err, want)
	}
}
