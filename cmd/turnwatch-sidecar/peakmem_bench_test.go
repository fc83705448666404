package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"turnwatch.dev/turnwatch/pkg/protocol"
)

// BenchmarkSidecarPeakMemory is the real sidecar binary's peak resident set
// (VmHWM) on the hostile inputs of a turn that refuses (guards.refuse with
// nudgeDelivery file, docs/nudges.md): one Write of 12 MiB; one line just
// under the 16 MiB cap whose arguments are all escapes, and four of them in
// a row; 96 distinct calls of 1 MiB. The sidecar follows a stand-in API
// server (apiStandIn) to the turn's end; peak-MiB is read once it reported
// Finished. The Pod's limit is 128Mi (docs/performance.md, "The sidecar's
// memory on hostile input").
//
// TURNWATCH_BASELINE_SIDECAR names another build of the sidecar (main's) to
// measure in the same run, as impl=baseline:
//
//	mkdir /tmp/base && git archive main | tar -x -C /tmp/base
//	(cd /tmp/base && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o /tmp/sidecar-base ./cmd/turnwatch-sidecar)
//	TURNWATCH_BASELINE_SIDECAR=/tmp/sidecar-base go test ./cmd/turnwatch-sidecar -run '^$' -bench SidecarPeakMemory -benchtime 1x -count 3
func BenchmarkSidecarPeakMemory(b *testing.B) {
	type impl struct {
		name, bin string
		env       []string
	}
	bin := buildSidecar(b, "")
	impls := []impl{
		// In its 128Mi container the sidecar sets a soft limit of 3/4 of
		// it (sidecar.LimitMemory); here, without one, GOMEMLIMIT says so.
		{"this", bin, []string{fmt.Sprintf("GOMEMLIMIT=%d", 128<<20*3/4)}},
		{"this-without-soft-limit", bin, nil},
	}
	if base := os.Getenv("TURNWATCH_BASELINE_SIDECAR"); base != "" {
		impls = append(impls, impl{"baseline", base, nil})
	}
	for _, in := range hostileInputs() {
		for _, impl := range impls {
			b.Run("input="+in.name+"/impl="+impl.name, func(b *testing.B) {
				var peak int64
				for b.Loop() {
					peak = max(peak, peakRSS(b, impl.bin, impl.env, in.lines))
				}
				b.ReportMetric(float64(peak)/1024, "peak-MiB")
			})
		}
	}
}

// refusingGuards are guards under which the sidecar judges every call for
// the agent's hook; no step budget, so that many calls trip nothing.
const refusingGuards = `{"stepBudget":0,"nudgeDelivery":"file","refuse":true,"refuseWait":"2s"}`

// peakRSS runs the sidecar over lines (claude stream-json) to the turn's
// end and returns its peak resident set in KiB.
func peakRSS(b *testing.B, bin string, env []string, lines func(emit func(string))) int64 {
	srv, hs := newAPIStandIn(b)
	lines(func(l string) { srv.write(l) })
	srv.exit()
	run := startSidecar(b, bin, hs, standInConfig{format: "claude", guards: refusingGuards, stateDir: b.TempDir(), nudgeDir: b.TempDir(), env: env})
	defer run.stop()
	if _, ok := srv.waitFor(protocol.ConditionFinished, 3*time.Minute); !ok {
		select {
		case <-run.done:
			b.Logf("the sidecar ended without reporting Finished (%v):\n%s", run.cmd.ProcessState, tail(run.stderr.String()))
			return -1
		default:
		}
		b.Fatalf("no Finished condition in 3 minutes:\n%s", tail(run.stderr.String()))
	}
	hwm, err := peakOf(run.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	return hwm
}

// peakOf is a process's peak resident set (VmHWM), in KiB.
func peakOf(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			return strconv.ParseInt(f[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

func tail(s string) string {
	if len(s) > 20000 {
		return "..." + s[len(s)-20000:]
	}
	return s
}

// hostileInput is a claude stream an agent can make its sidecar read.
type hostileInput struct {
	name  string
	lines func(emit func(string))
}

func hostileInputs() []hostileInput {
	return []hostileInput{
		{"write12MiB", func(emit func(string)) {
			turn(emit, 1, func(int) string { return writeCall("/w/big.go", sourceText(12<<20)) })
		}},
		{"line16MiB", func(emit func(string)) { turn(emit, 1, escapedCall) }},
		// The collector lets the heap grow to twice what was live at its
		// last run: one run during a long line, and the next lines' copies
		// pile up on it.
		{"lines16MiBx4", func(emit func(string)) { turn(emit, 4, escapedCall) }},
		{"calls96x1MiB", func(emit func(string)) {
			turn(emit, 96, func(i int) string { return writeCall(fmt.Sprintf("/w/f%d.go", i), sourceText(1<<20)) })
		}},
	}
}

// escapedCall makes a line just under the cap with the kubelet's timestamp:
// every character of the content is an escape or one that JSON encoders
// escape (<, >, &).
func escapedCall(i int) string {
	path := fmt.Sprintf("/w/page%d.html", i)
	return writeCall(path, escapeText(16<<20-len(assistantLine(i, writeCall(path, "")))-64))
}

// turn emits a claude turn of n tool calls made by call(i), each answered.
func turn(emit func(string), n int, call func(i int) string) {
	emit(`{"type":"system","subtype":"init","session_id":"s","model":"claude-sonnet-4-5","tools":["Write"]}`)
	for i := range n {
		emit(assistantLine(i, call(i)))
		emit(toolResult(i))
	}
	emit(`{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s","total_cost_usd":0.01}`)
}

func assistantLine(i int, call string) string {
	return fmt.Sprintf(`{"type":"assistant","message":{"content":[%s],"id":"msg_%d","model":"claude-sonnet-4-5","role":"assistant","stop_reason":null,"type":"message","usage":{"input_tokens":10,"output_tokens":10}},"session_id":"s"}`,
		strings.Replace(call, `"id":"toolu"`, fmt.Sprintf(`"id":"toolu_%d"`, i), 1), i)
}

// writeCall is a Write tool_use block; content is already JSON-escaped.
func writeCall(path, content string) string {
	return `{"id":"toolu","input":{"file_path":"` + path + `","content":"` + content + `"},"name":"Write","type":"tool_use"}`
}

// sourceText is n bytes of JSON-escaped Go source, as a model writes it.
func sourceText(n int) string {
	const line = `\tif a < b && c > d {\n\t\tfmt.Println(\"x =\", x)\n\t}\n`
	return fill(line, n)
}

// escapeText is n bytes of JSON string contents that are all escapes or
// characters an encoder escapes; the ASCII escape (\u0041) makes the engine
// read the line again from a decoded copy (jsonscan.NeedsCanon).
func escapeText(n int) string { return fill(`<\u00e9\u0041>&\"\n`, n) }

func fill(unit string, n int) string {
	s := strings.Repeat(unit, n/len(unit)+1)
	s = s[:n]
	for strings.HasSuffix(s, `\`) || strings.LastIndexByte(s, '\\') > len(s)-6 { // no escape cut in half
		s = s[:len(s)-1]
	}
	return s
}
