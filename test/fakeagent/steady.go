package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// steady writes a healthy pi stream at rate events a second for d, then
// stops: the load of the sidecar footprint test (docs/performance.md,
// "Sidecar footprint"). Each model message says a few sentences in small
// deltas (every message_update restates the partial message, as pi does:
// lines of 1-3 KB) and calls one tool with arguments of its own, so no
// detector trips however long it runs (with the step budget off).
func steady(ctx context.Context, w io.Writer, rate int, d time.Duration) error {
	bw := bufio.NewWriter(w)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	end := time.Now().Add(d)
	g := &steadyGen{}
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if _, err := bw.Write(g.next()); err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// steadyGen yields the stream's lines one at a time, message after message.
type steadyGen struct {
	msg     int
	pending [][]byte
}

var steadyWords = strings.Fields(`the watchdog reads each line once and folds it into counters while
the model writes code explains its reasoning and calls tools to run the tests`)

func (g *steadyGen) next() []byte {
	if len(g.pending) == 0 {
		g.pending = g.message()
	}
	l := g.pending[0]
	g.pending = g.pending[1:]
	return l
}

// message is one model message and its tool call, as lines.
func (g *steadyGen) message() [][]byte {
	g.msg++
	var out [][]byte
	add := func(v any) {
		b, _ := json.Marshal(v)
		out = append(out, append(b, '\n'))
	}
	call := fmt.Sprintf("call_%07d", g.msg)
	args := map[string]any{"command": fmt.Sprintf("go test ./pkg/p%d/...", g.msg)}
	const cost = 0.0001 // per message: the spend guard never trips
	var text strings.Builder
	msg := func(withCall bool, stop string) map[string]any {
		content := []any{map[string]any{"type": "text", "text": text.String()}}
		if withCall {
			content = append(content, map[string]any{"type": "toolCall", "id": call, "name": "bash", "arguments": args})
		}
		return map[string]any{"role": "assistant", "content": content, "provider": "openai", "model": "gpt-5.1-codex",
			"usage":      map[string]any{"input": 10, "output": 5, "totalTokens": 15, "cost": map[string]any{"total": cost}},
			"stopReason": stop}
	}
	add(map[string]any{"type": "turn_start"})
	add(map[string]any{"type": "message_start", "message": msg(false, "")})
	for i := range 16 {
		delta := steadyWords[(g.msg+i)%len(steadyWords)] + " " + steadyWords[(g.msg*7+i)%len(steadyWords)] + " "
		text.WriteString(delta)
		p := msg(false, "")
		add(map[string]any{"type": "message_update", "message": p,
			"assistantMessageEvent": map[string]any{"type": "text_delta", "contentIndex": 0, "delta": delta, "partial": p}})
	}
	p := msg(true, "toolUse")
	add(map[string]any{"type": "message_end", "message": p})
	add(map[string]any{"type": "tool_execution_start", "toolCallId": call, "toolName": "bash", "args": args})
	add(map[string]any{"type": "tool_execution_end", "toolCallId": call, "toolName": "bash",
		"result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "ok"}}}, "isError": false})
	add(map[string]any{"type": "turn_end", "message": p, "toolResults": []any{}})
	return out
}
