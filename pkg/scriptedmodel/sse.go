package scriptedmodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// sseWriter writes one answer: a stream of server-sent events, or one JSON
// body when the request did not ask for a stream.
type sseWriter struct {
	w       http.ResponseWriter
	r       *http.Request
	stream  bool
	pauseD  time.Duration
	started bool
}

func newSSEWriter(w http.ResponseWriter, r *http.Request, stream bool, pause time.Duration) *sseWriter {
	return &sseWriter{w: w, r: r, stream: stream, pauseD: pause}
}

func (s *sseWriter) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	s.w.WriteHeader(http.StatusOK)
}

// event writes one event; name "" writes a data-only event.
func (s *sseWriter) event(name string, v any) {
	s.start()
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // our own answer types always marshal
	}
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	s.flush()
}

// raw writes a data line as is (Chat Completions' [DONE]).
func (s *sseWriter) raw(data string) {
	s.start()
	fmt.Fprintf(s.w, "data: %s\n\n", data)
	s.flush()
}

func (s *sseWriter) flush() {
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// whole writes a non-streamed answer.
func (s *sseWriter) whole(v any) {
	s.w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(s.w).Encode(v); err != nil {
		return // the client went away
	}
}

// pause holds the stream until the client goes away or the pause passes;
// it reports false when the client went away (write no more).
func (s *sseWriter) pause() bool {
	t := time.NewTimer(s.pauseD)
	defer t.Stop()
	select {
	case <-s.r.Context().Done():
		return false
	case <-t.C:
		return true
	}
}
