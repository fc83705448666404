package main

import (
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	"turnwatch.dev/turnwatch/pkg/nudgefile"
	"turnwatch.dev/turnwatch/pkg/protocol"
)

func TestProbeChecks(t *testing.T) {
	refused := errors.New("connection refused")
	tests := []struct {
		name       string
		env        map[string]string
		dialErr    error
		readyErr   error
		wantReason string // "" ready
	}{
		{name: "no drill, no volume", env: map[string]string{}},
		{name: "the model accepts", env: map[string]string{protocol.EnvModelPort: "4000"}},
		{name: "the model does not accept yet", env: map[string]string{protocol.EnvModelPort: "4000"}, dialErr: refused,
			wantReason: "does not accept on 127.0.0.1:4000: connection refused"},
		{name: "a bad port", env: map[string]string{protocol.EnvModelPort: "x"}, wantReason: `TURNWATCH_MODEL_PORT "x"`},
		{name: "the volume is ready", env: map[string]string{nudgefile.EnvDir: "/run/turnwatch"}},
		{name: "the volume is not ready", env: map[string]string{nudgefile.EnvDir: "/run/turnwatch"}, readyErr: refused,
			wantReason: "the nudges volume /run/turnwatch is not ready"},
		{name: "both, the model first", env: map[string]string{protocol.EnvModelPort: "4000", nudgefile.EnvDir: "/run/turnwatch"},
			dialErr: refused, readyErr: refused, wantReason: "scripted model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dialed string
			in := probeInput{getenv: func(k string) string { return tt.env[k] },
				dial:  func(addr string) error { dialed = addr; return tt.dialErr },
				ready: func(string) error { return tt.readyErr }}
			reason, failed := probe(in)
			switch {
			case tt.wantReason == "" && failed:
				t.Errorf("not ready: %s", reason)
			case tt.wantReason != "" && (!failed || !strings.Contains(reason, tt.wantReason)):
				t.Errorf("got %q (failed %v), want %q", reason, failed, tt.wantReason)
			}
			if p := tt.env[protocol.EnvModelPort]; p == "4000" && dialed != "127.0.0.1:4000" {
				t.Errorf("dialed %q", dialed)
			}
		})
	}
}

// The probe as the kubelet runs it: the real port and the real volume.
func TestProbeCommand(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	dir := t.TempDir()
	t.Setenv(protocol.EnvModelPort, port)
	t.Setenv(nudgefile.EnvDir, dir)
	run := func() (int, string) {
		var stderr strings.Builder
		code := dispatch([]string{"probe"}, strings.NewReader(""), io.Discard, &stderr)
		return code, stderr.String()
	}
	if code, msg := run(); code != 1 || !strings.Contains(msg, "nudges volume") || strings.Count(msg, "\n") != 1 {
		t.Errorf("before the marker: exit %d, %q", code, msg)
	}
	if err := nudgefile.WriteReady(dir); err != nil {
		t.Fatal(err)
	}
	if code, msg := run(); code != 0 {
		t.Errorf("ready: exit %d, %q", code, msg)
	}
	ln.Close()
	if code, msg := run(); code != 1 || !strings.Contains(msg, "127.0.0.1:"+port) {
		t.Errorf("the model gone: exit %d, %q", code, msg)
	}
}
