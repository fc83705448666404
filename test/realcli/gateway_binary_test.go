//go:build realcli

package realcli

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/monitor"
	"turnwatch.dev/turnwatch/pkg/scriptedmodel"
)

// gatewayProcess is the real `turnwatch-sidecar gateway` in front of an
// upstream: its URL, and what its stderr said (each message end, each
// refusal).
type gatewayProcess struct {
	url       string
	mu        sync.Mutex
	refusals  int
	refusedAt time.Time // when the first refusal was logged
	done      chan struct{}
}

// refusedLog is the gateway's log message of a refused model request.
const refusedLog = `"refused a model request"`

// startGateway runs the sidecar's gateway subcommand for c with the real
// key in a file, the CLI's placeholder as its token, refusing after
// refuseAfter model requests; each message end it logs is fed to m.
func startGateway(t *testing.T, c cli, upstream string, refuseAfter string, m *metered) *gatewayProcess {
	t.Helper()
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(realKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sidecarBin, "gateway", "--upstream", upstream, "--format", c.format,
		"--key-file", keyFile, "--token", placeholder, "--refuse-after", refuseAfter)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	g := &gatewayProcess{done: make(chan struct{})}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-g.done
		cmd.Wait()
	})
	go g.read(stderr, m)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the gateway printed no URL: %v", err)
	}
	g.url = strings.TrimSpace(line)
	return g
}

// read feeds the gateway's message ends to m and notes its refusals.
func (g *gatewayProcess) read(stderr interface{ Read([]byte) (int, error) }, m *metered) {
	defer close(g.done)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		var end struct {
			End   bool          `json:"end"`
			Model string        `json:"model"`
			Usage monitor.Usage `json:"usage"`
		}
		switch line := sc.Text(); {
		case json.Unmarshal([]byte(line), &end) == nil && end.End:
			m.observe(monitor.ModelEvent{End: true, Model: end.Model, Usage: end.Usage})
		case strings.Contains(line, refusedLog):
			g.mu.Lock()
			g.refusals++
			if g.refusedAt.IsZero() {
				g.refusedAt = time.Now()
			}
			g.mu.Unlock()
		}
	}
}

// The sidecar's own gateway process (--key-file, --token, --refuse-after,
// the CLI's refusal status from its --format) in front of the scripted
// model: the upstream gets the real key, the message ends it logs are the
// usage served, and after two model requests the next is refused, never
// forwarded, and the CLI ends by itself within 2 s.
func TestGatewayBinary(t *testing.T) {
	loop, err := scriptedmodel.Lookup("identicalLoop")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			m, upstream := newUpstream(t, loop)
			g := startGateway(t, c, upstream, "2", m)
			o := runAt(t, c.name, c.format, cliLaunch(c), "gateway-binary", g.url, map[string]any{}, t.TempDir())
			m.checkKeys(t, o)
			printed := o.report.ResultError
			if printed == "" {
				printed = lastLine(o.stream)
			}
			time.Sleep(100 * time.Millisecond) // the gateway's last stderr lines
			g.mu.Lock()
			refusals, at := g.refusals, g.refusedAt
			g.mu.Unlock()
			m.mu.Lock()
			metered := m.cost
			m.mu.Unlock()
			served := m.served()
			gone := o.exited.Sub(at)
			t.Logf("%s: metered $%s, served $%s; %d refused, gone %v after, exit %d, printed %q", c.name, metered, served, refusals, gone.Round(time.Millisecond), o.exit, printed)
			switch {
			case metered != served || served == 0:
				t.Errorf("metered $%s, served $%s: want the same, not 0", metered, served)
			case refusals != 1 || at.IsZero():
				t.Errorf("the gateway refused %d requests, want exactly 1", refusals)
			case len(m.model.Requests()) != 2:
				t.Errorf("the upstream got %d requests, want the 2 the gateway lets through", len(m.model.Requests()))
			case o.trip != nil || gone > 2*time.Second:
				t.Errorf("tripped %v, gone %v after the refusal: want the CLI gone by itself within 2s", o.trip != nil, gone)
			case !strings.Contains(printed, "turnwatch refused this model request (budget)"):
				t.Errorf("the CLI printed %q, want the gateway's refusal", printed)
			}
		})
	}
}
