//go:build realcli

package realcli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/agents"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// refusing is a model that refuses mid-turn, as the model gateway does
// after a trip or a spent budget: the first `after` requests of the main
// conversation are answered by good (a scenario's scripted model), every
// later one by refuse (the scripted model's apiError, in the API's own
// error shape, at the status). Side requests (no tools: a title, a CLI's
// own check) always go to good.
type refusing struct {
	good, refuse *scriptedmodel.Server
	after        int
	mu           sync.Mutex
	main         int
	refusedAt    time.Time // when the first refusal was answered
}

func newRefusing(t *testing.T, sc scriptedmodel.Scenario, status, after int) *refusing {
	t.Helper()
	good, err := scriptedmodel.New(scriptedmodel.Options{Scenario: sc})
	if err != nil {
		t.Fatal(err)
	}
	apiError, err := scriptedmodel.Lookup("apiError")
	if err != nil {
		t.Fatal(err)
	}
	refuse, err := scriptedmodel.New(scriptedmodel.Options{Scenario: apiError, ErrorStatus: status})
	if err != nil {
		t.Fatal(err)
	}
	return &refusing{good: good, refuse: refuse, after: after}
}

func (m *refusing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if !offersTools(body) {
		m.good.ServeHTTP(w, r)
		return
	}
	m.mu.Lock()
	m.main++
	refuse := m.main > m.after
	m.mu.Unlock()
	if !refuse {
		m.good.ServeHTTP(w, r)
		return
	}
	m.refuse.ServeHTTP(w, r)
	m.mu.Lock()
	if m.refusedAt.IsZero() {
		m.refusedAt = time.Now()
	}
	m.mu.Unlock()
}

// offersTools says whether a request body offers the model tools: a
// request of the main conversation (the scripted model's own test of a
// side request, Conversation.Tools).
func offersTools(body []byte) bool {
	var req struct {
		Tools []json.RawMessage `json:"tools"`
	}
	return json.Unmarshal(body, &req) == nil && len(req.Tools) > 0
}

// refusedRun is what a CLI did with a refusal: the requests each side got,
// how long after the refusal it was gone, its exit code and last words.
type refusedRun struct {
	good, refused int
	// late are the requests, besides the refusal, that came after it.
	late    []scriptedmodel.Request
	gone    time.Duration
	exit    int
	tripped bool
	printed string // the stream's error: the replay's resultError, or its last line
}

// runRefused plays sc to c and refuses the main conversation's request
// after the first `after` at status.
func runRefused(t *testing.T, c cli, sc scriptedmodel.Scenario, status, after int) refusedRun {
	m := newRefusing(t, sc, status, after)
	o := runOn(t, c.name, c.format, cliLaunch(c), fmt.Sprintf("refused%d", status), m, map[string]any{}, t.TempDir())
	r := refusedRun{exit: o.exit, tripped: o.trip != nil, printed: o.report.ResultError}
	if r.printed == "" {
		r.printed = lastLine(o.stream)
	}
	r.good, r.refused = len(m.good.Main()), len(m.refuse.Requests())
	m.mu.Lock()
	at := m.refusedAt
	m.mu.Unlock()
	if at.IsZero() {
		return r
	}
	r.gone = o.exited.Sub(at)
	for _, srv := range []*scriptedmodel.Server{m.good, m.refuse} {
		for _, q := range srv.Requests() {
			if q.Time.After(at) {
				r.late = append(r.late, q)
			}
		}
	}
	return r
}

// refusedAfter is how many good answers of the main conversation come
// before the refusal: the CLI is mid-turn, between two tool calls, as after
// a loop's trip (identicalLoop trips at its 4th call).
const refusedAfter = 2

// Each CLI ends its turn at once when the gateway refuses a request with
// its Refusal status (agents.CLIs): mid-turn, after good answers, the next
// request is refused once, never retried, and the CLI is gone by itself
// within 2 s, asking nothing more (docs/agents.md "The status that ends a
// turn").
func TestRefusal(t *testing.T) {
	loop, err := scriptedmodel.Lookup("identicalLoop")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range clis {
		// One CLI at a time: five at once on two cores make a CLI's exit
		// the machine's, not its own (gemini's waits for V8's threads).
		t.Run(c.name, func(t *testing.T) {
			row, _ := agents.Lookup(c.format)
			r := runRefused(t, c, loop, row.Refusal, refusedAfter)
			t.Logf("%s refused with %d: gone %v after it, exit %d, printed %q", c.name, row.Refusal, r.gone.Round(time.Millisecond), r.exit, r.printed)
			switch {
			case r.good != refusedAfter || r.refused != 1:
				t.Errorf("the model answered %d good requests and refused %d: want %d and exactly 1 (no retry)", r.good, r.refused, refusedAfter)
			case len(r.late) > 0:
				t.Errorf("requests after the refusal: %+v", r.late)
			case r.tripped:
				t.Errorf("watch stopped the CLI: it did not end by itself")
			case r.gone > 2*time.Second:
				t.Errorf("the CLI was gone %v after the refusal, want within 2s", r.gone)
			}
		})
	}
}

// TestRefusalStatuses finds the status that ends each CLI's turn: it
// refuses mid-turn with each status of TURNWATCH_REALCLI_STATUSES (a comma
// list, e.g. 400,401,403,404,413,422) and logs what each CLI did. It is
// how agents.CLIs' Refusal was found; run it when a CLI's pin moves.
func TestRefusalStatuses(t *testing.T) {
	list := os.Getenv("TURNWATCH_REALCLI_STATUSES")
	if list == "" {
		t.Skip("set TURNWATCH_REALCLI_STATUSES to the statuses to try")
	}
	loop, err := scriptedmodel.Lookup("identicalLoop")
	if err != nil {
		t.Fatal(err)
	}
	// A status the CLI retries keeps it going for minutes: what the first
	// 40 s show is enough.
	limit := runLimit
	runLimit = 40 * time.Second
	t.Cleanup(func() { runLimit = limit })
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, s := range strings.Split(list, ",") {
				status, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil {
					t.Fatal(err)
				}
				r := runRefused(t, c, loop, status, refusedAfter)
				t.Logf("STATUS %s %d: good %d refused %d late %d gone %v exit %d tripped %v printed %q",
					c.name, status, r.good, r.refused, len(r.late), r.gone.Round(time.Millisecond), r.exit, r.tripped, tail(r.printed, 300))
				for _, q := range r.late {
					t.Logf("  late %s %s model=%s side=%v messages=%d status=%d", q.Time.Format("15:04:05.000"), q.Path, q.Model, q.Side, q.Messages, q.Status)
				}
			}
		})
	}
}

// lastLine is a stream's last non-empty line.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
