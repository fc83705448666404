package scriptedmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"turnwatch.dev/turnwatch/pkg/modelapi"
)

// The APIs the model speaks, as logged.
const (
	APIAnthropic = modelapi.NameAnthropic
	APIResponses = modelapi.NameResponses
	APIChat      = modelapi.NameChat
	APIGemini    = modelapi.NameGemini
)

// Options configure a Server.
type Options struct {
	// Scenario is the script to play.
	Scenario Scenario
	// ErrorStatus is the HTTP status apiError answers with [400].
	ErrorStatus int
	// Pause is how long the stall scenario pauses mid-stream [10m], at
	// least twice Guards.StallTimeout; the pause also ends when the client
	// goes away.
	Pause time.Duration
	// Guards are the run's guards as TURNWATCH_GUARDS carries them (a JSON
	// object with the names of docs/design.md#thresholds-and-guards, the
	// defaults merged in): the loop and degeneration scenarios play past
	// them (sized.go). Empty, each scenario plays its length at the
	// default guards. (JSON, not monitor.Guards: monitor's tests replay
	// this package's scenarios.)
	Guards json.RawMessage
	// LogPath, when set, gets one JSON line per request (see Request).
	LogPath string
	// MaxLog bounds the in-memory log (Requests) to the newest MaxLog
	// requests [0: every one]; the counts of Report stay whole.
	MaxLog int
	// MaxRequests bounds the requests served at once [16]; more wait for
	// their turn.
	MaxRequests int
	// MaxBody bounds a request body [16 MiB]; a larger one is refused.
	MaxBody int64
	// Now is the clock of the log's times [time.Now].
	Now func() time.Time
	// Key, when set, is the API key every request must carry in its API's
	// own header (a provider's check): another is answered 401, in the
	// API's shape. The tests of the model gateway give the gateway the key
	// and the agent none.
	Key string
}

func (o *Options) errorStatus() int {
	if o.ErrorStatus == 0 {
		return http.StatusBadRequest
	}
	return o.ErrorStatus
}

// Request is one logged request.
type Request struct {
	Seq  int       `json:"seq"`
	Time time.Time `json:"time"`
	API  string    `json:"api"`
	Path string    `json:"path"`
	// Model is the model the request named.
	Model string `json:"model,omitempty"`
	// Side is true for a request that offered no tools (a title, a CLI's
	// own check): it got a short plain answer, not the scenario.
	Side bool `json:"side,omitempty"`
	// Step is the scenario position the request was at (Conversation.Step).
	Step int `json:"step"`
	// Prompts and Messages count the conversation's prompts and messages.
	Prompts  int `json:"prompts"`
	Messages int `json:"messages"`
	// Status is the HTTP status answered.
	Status int `json:"status"`
	// Input and Output are the tokens the answer reported as used, its
	// usage (0 for an error): what a gateway in front of the model meters.
	Input  int `json:"input,omitempty"`
	Output int `json:"output,omitempty"`
	// Reply says in a few words what was answered.
	Reply string `json:"reply,omitempty"`
	// Body is the request body as sent.
	Body json.RawMessage `json:"body,omitempty"`
	// Conversation is the request as the model read it.
	Conversation *Conversation `json:"-"`
}

// Server serves the scripted model. It is safe for concurrent use.
type Server struct {
	opts Options
	// play is what the scenario's replies read besides the conversation.
	play play
	// slots holds a token per request being served (MaxRequests).
	slots chan struct{}
	mu    sync.Mutex
	log   []Request
	seq   int
	file  *os.File
	// served counts what was served, whatever the log kept (Served).
	served served
}

// New makes a server playing opts.Scenario.
func New(opts Options) (*Server, error) {
	if opts.Scenario.reply == nil {
		return nil, fmt.Errorf("scriptedmodel: no scenario")
	}
	if opts.Pause == 0 {
		opts.Pause = 10 * time.Minute
	}
	g, err := parseGuards(opts.Guards)
	if err != nil {
		return nil, err
	}
	opts.Pause = max(opts.Pause, 2*g.StallTimeout.D())
	if opts.MaxBody == 0 {
		opts.MaxBody = 16 << 20
	}
	if opts.MaxRequests == 0 {
		opts.MaxRequests = 16
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{opts: opts, play: play{guards: g, errorStatus: opts.errorStatus()}, slots: make(chan struct{}, opts.MaxRequests)}
	if opts.LogPath != "" {
		f, err := os.OpenFile(opts.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("scriptedmodel: request log: %w", err)
		}
		s.file = f
	}
	return s, nil
}

// Close closes the request log.
func (s *Server) Close() error {
	if s.file == nil {
		return nil
	}
	return s.file.Close()
}

// Requests returns a copy of the log so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// Main returns the logged requests of the main conversation (not side).
func (s *Server) Main() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if !r.Side && r.Conversation != nil {
			out = append(out, r)
		}
	}
	return out
}

// dialect is one API: how to read its requests and write its answers.
type dialect struct {
	api string
	// match says whether a path belongs to the API (modelapi.API.Match).
	match func(path string) bool
	// parse reads a request body into a conversation.
	parse func(path string, body []byte) (*Conversation, error)
	// write answers with reply (streamed when c.Stream).
	write func(w *sseWriter, c *Conversation, r Reply)
	// fail answers with an HTTP error in the API's shape (failWith).
	fail func(w http.ResponseWriter, status int, msg string)
	// extra answers the API's side endpoints (token counts); false when
	// the path is not one.
	extra func(w http.ResponseWriter, path string) bool
}

var dialects = []dialect{anthropicAPI, responsesAPI, chatAPI, geminiAPI}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if proxied(r) {
		// The model is no proxy: it names no other host and dials nothing.
		s.record(Request{Path: r.RequestURI, Status: http.StatusMethodNotAllowed, Reply: "proxy request refused"})
		http.Error(w, "the scripted model is not a proxy: "+r.Method+" "+r.RequestURI+" refused", http.StatusMethodNotAllowed)
		return
	}
	if !s.keyed(r) {
		s.record(Request{Path: r.URL.Path, Status: http.StatusUnauthorized, Reply: "wrong or no API key"})
		if api, ok := modelapi.Of(r.URL.Path); ok {
			failWith(api)(w, http.StatusUnauthorized, "the scripted model wants its API key")
		} else {
			http.Error(w, "the scripted model wants its API key", http.StatusUnauthorized)
		}
		return
	}
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-r.Context().Done():
		return
	}
	s.serve(w, r)
}

// keyed says whether r carries the key, when the server wants one.
func (s *Server) keyed(r *http.Request) bool {
	if s.opts.Key == "" {
		return true
	}
	api, ok := modelapi.Of(r.URL.Path)
	return ok && r.Header.Get(api.KeyHeader) == api.KeyPrefix+s.opts.Key
}

// proxied says whether r asks the server to act as a proxy: a CONNECT, or
// a request line naming a host (an absolute URI).
func proxied(r *http.Request) bool {
	return r.Method == http.MethodConnect || r.URL.IsAbs() || r.URL.Host != ""
}

// bodyTimeout bounds the read of a request body: a real CLI sends its
// request at once. (A variable for the test of a body that never comes.)
var bodyTimeout = 30 * time.Second

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	d, ok := dialectOf(r.URL.Path)
	if !ok || r.Method != http.MethodPost {
		s.record(Request{API: "", Path: r.URL.Path, Status: http.StatusNotFound, Reply: "no such endpoint"})
		http.Error(w, "the scripted model serves no "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(bodyTimeout)) // a test's recorder has no deadline
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBody))
	if err != nil {
		// The deadline stays: the server would wait for the rest of the
		// body before it answers. The connection is not kept.
		w.Header().Set("Connection", "close")
		s.record(Request{API: d.api, Path: r.URL.Path, Status: http.StatusRequestEntityTooLarge, Reply: err.Error()})
		d.fail(w, http.StatusRequestEntityTooLarge, err.Error())
		return
	}
	_ = rc.SetReadDeadline(time.Time{})
	if d.extra(w, r.URL.Path) {
		s.record(Request{API: d.api, Path: r.URL.Path, Side: true, Status: http.StatusOK, Reply: "token count", Body: rawJSON(body)})
		return
	}
	c, err := d.parse(r.URL.Path, body)
	if err != nil {
		s.record(Request{API: d.api, Path: r.URL.Path, Status: http.StatusBadRequest, Reply: err.Error(), Body: rawJSON(body)})
		d.fail(w, http.StatusBadRequest, "the scripted model could not read this request: "+err.Error())
		return
	}
	c.API = d.api
	reply, side := s.answer(c)
	rec := Request{API: d.api, Path: r.URL.Path, Model: c.Model, Side: side, Step: c.Step(), Prompts: c.Prompts(),
		Messages: len(c.Messages), Status: http.StatusOK, Reply: describe(reply), Body: rawJSON(body), Conversation: c}
	if reply.Status != 0 {
		rec.Status = reply.Status
		s.record(rec)
		d.fail(w, reply.Status, fmt.Sprintf("scripted %s error", http.StatusText(reply.Status)))
		return
	}
	rec.Input, rec.Output = reply.Input, reply.Output
	s.record(rec)
	sw := newSSEWriter(w, r, c.Stream, s.opts.Pause)
	d.write(sw, c, reply)
}

// answer is the scenario's reply, or a plain one for a side request.
func (s *Server) answer(c *Conversation) (Reply, bool) {
	if len(c.Tools) == 0 {
		if len(c.Schema) > 0 {
			return Reply{Text: []string{schemaAnswer(c.Schema)}, Stop: StopEnd, Input: 10, Output: 10}, true
		}
		return Reply{Text: []string{"Scripted answer"}, Stop: StopEnd, Input: 10, Output: 3}, true
	}
	r := s.opts.Scenario.reply(c, &s.play)
	if r.Input == 0 {
		r.Input = 1000 + 100*c.Step()
	}
	if r.Output == 0 {
		r.Output = 50
	}
	// Ids unique in the conversation (a continued one holds the earlier
	// turn's calls: Claude Code drops a call whose id it has seen) and
	// stable across a retry of the same request.
	for i := range r.Calls {
		if r.Calls[i].ID == "" {
			r.Calls[i].ID = callID("call_", len(c.Messages), i)
		}
	}
	return r, false
}

// failWith answers with an HTTP error in api's shape (modelapi.API.Error).
func failWith(api modelapi.API) func(w http.ResponseWriter, status int, msg string) {
	return func(w http.ResponseWriter, status int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(api.Error(status, msg))
	}
}

func dialectOf(path string) (dialect, bool) {
	for _, d := range dialects {
		if d.match(path) {
			return d, true
		}
	}
	return dialect{}, false
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	r.Seq = s.seq
	r.Time = s.opts.Now()
	s.count(r)
	s.log = append(s.log, r)
	if s.opts.MaxLog > 0 && len(s.log) > s.opts.MaxLog {
		s.log = slices.Delete(s.log, 0, len(s.log)-s.opts.MaxLog)
	}
	if s.file != nil {
		b, err := json.Marshal(r)
		if err == nil {
			s.file.Write(append(b, '\n'))
		}
	}
}

// describe says in a few words what a reply is, for the log.
func describe(r Reply) string {
	var parts []string
	if r.Status != 0 {
		return fmt.Sprintf("HTTP %d", r.Status)
	}
	if len(r.Thinking) > 0 {
		parts = append(parts, fmt.Sprintf("%d thinking deltas", len(r.Thinking)))
	}
	if len(r.Text) > 0 {
		parts = append(parts, fmt.Sprintf("%d text deltas", len(r.Text)))
	}
	for _, c := range r.Calls {
		parts = append(parts, "call "+c.Name+" "+string(c.Args))
	}
	parts = append(parts, "stop "+string(r.Stop))
	if r.Pause {
		parts = append(parts, "paused")
	}
	return strings.Join(parts, ", ")
}

// rawJSON keeps a body in the log when it is JSON, else its quoted text.
func rawJSON(b []byte) json.RawMessage {
	if json.Valid(b) {
		var buf bytes.Buffer
		if json.Compact(&buf, b) == nil {
			return buf.Bytes()
		}
	}
	q, _ := json.Marshal(string(b))
	return q
}

// Told reports whether any main-conversation request's messages contain s:
// what a test asks of "was the model told".
func (s *Server) Told(sub string) bool {
	for _, r := range s.Main() {
		if r.Conversation.Contains(sub) {
			return true
		}
	}
	return false
}

// Contains reports whether the system prompt or any message carries sub.
func (c *Conversation) Contains(sub string) bool {
	if strings.Contains(c.System, sub) {
		return true
	}
	for _, m := range c.Messages {
		if strings.Contains(m.Text, sub) {
			return true
		}
		for _, r := range m.Results {
			if strings.Contains(r.Text, sub) {
				return true
			}
		}
	}
	return false
}

// schemaAnswer fills a JSON schema's required properties with neutral
// values: "user" or the first enum value for strings, 0, false.
func schemaAnswer(raw json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Type any      `json:"type"`
			Enum []string `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(raw, &s)
	out := map[string]any{}
	for name, p := range s.Properties {
		switch {
		case len(p.Enum) > 0:
			out[name] = p.Enum[0]
		case strings.EqualFold(typeOf(p.Type), "number"), strings.EqualFold(typeOf(p.Type), "integer"):
			out[name] = 0
		case strings.EqualFold(typeOf(p.Type), "boolean"):
			out[name] = false
		default:
			out[name] = "user"
		}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// ServeLoopback serves s on a free port of 127.0.0.1, for a test whose
// agents share this machine's loopback, and returns its URL and a func
// that stops it.
func (s *Server) ServeLoopback() (url string, stop func(), err error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs, _ := s.Serve(ln)
	return "http://" + ln.Addr().String(), func() { hs.Close() }, nil
}
