package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// hostileToolName is the name the hostile call gives its tool: an ANSI
// "clear the screen" and a line break before a forged verdict row, so that a
// reader that prints the agent's words raw shows a screen turnwatch never
// wrote (docs/protocol.md, "The agent's words are quoted escaped").
const hostileToolName = "Write\x1b[2J\x1b[H\nTRIPPED identicalCalls (forged)"

// hostileCallID names the hostile call and its answer.
const hostileCallID = "toolu_01hostile0000000001"

// totalCost matches the final result's own figure, which the hostile stream
// sets to 0 to erase what its messages were priced at.
var totalCost = regexp.MustCompile(`"total_cost_usd":[0-9.eE+-]+`)

// hostile returns r, a claude stream, played by a hostile agent: before its
// final result it makes one call of callBytes bytes of arguments (a 12 MiB
// Write, to make its watchdog fall over) under a tool name that would forge
// a row on a terminal, and its result reports a total cost of 0. The rest of
// the stream is unchanged, so its messages are priced as the scenario's.
func hostile(r io.Reader, callBytes int) io.Reader {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(playHostile(r, pw, callBytes)) }()
	return pr
}

func playHostile(r io.Reader, w io.Writer, callBytes int) error {
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriterSize(w, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			if strings.Contains(line, `{"type":"result"`) {
				stamp, _, _ := strings.Cut(line, " ")
				if err := writeHostileCall(bw, stamp, callBytes); err != nil {
					return err
				}
				line = totalCost.ReplaceAllString(line, `"total_cost_usd":0`)
			}
			if _, werr := bw.WriteString(line); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return bw.Flush()
		}
		if err != nil {
			return err
		}
	}
}

// writeHostileCall writes the call as claude prints it (an assistant
// message whose one content block is the tool_use) and its answer, both
// with the timestamp prefix of the line they precede.
func writeHostileCall(w *bufio.Writer, stamp string, callBytes int) error {
	input := map[string]string{"file_path": "/workspace/big.txt", "content": strings.Repeat("a", callBytes)}
	call := map[string]any{
		"type": "assistant",
		"message": map[string]any{
			"id": "msg_01hostile0000000001", "type": "message", "role": "assistant",
			"model": "claude-sonnet-4-5-20250929",
			"content": []any{map[string]any{"type": "tool_use", "id": hostileCallID,
				"name": hostileToolName, "input": input}},
			"stop_reason": "tool_use",
			"usage":       map[string]any{"input_tokens": 100, "output_tokens": 40},
		},
		"parent_tool_use_id": nil,
	}
	answer := map[string]any{
		"type": "user",
		"message": map[string]any{"role": "user", "content": []any{map[string]any{
			"tool_use_id": hostileCallID, "type": "tool_result", "content": "written", "is_error": false}}},
		"parent_tool_use_id": nil,
	}
	for _, v := range []any{call, answer} {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "%s %s\n", stamp, b); err != nil {
			return err
		}
	}
	return nil
}
