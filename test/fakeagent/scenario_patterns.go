package main

import (
	"fmt"
	"strings"
	"time"
)

// The scenarios of the pattern detectors (docs/design.md#cycles and after):
// loops the three incidents did not name.

// cycle reads two files in turn, A B A B ..., twelve times: no call repeats
// the one before it, so only cycles (cycleRepeats, off by default) sees it.
func cycle() Script {
	a := Call{Kind: Read, Path: "internal/config/load.go", Output: "package config\n\nfunc Load() {}\n", Took: 100 * time.Millisecond}
	b := Call{Kind: Read, Path: "internal/config/load_test.go", Output: "package config\n\nfunc TestLoad(t *testing.T) {}\n", Took: 100 * time.Millisecond}
	msgs := []Msg{{Wait: 1 * sec, Every: 80 * time.Millisecond,
		Text:  words("Comparing the loader with its test."),
		Calls: []Call{a}, Stop: "tool_use", In: 1500, Out: 40, CostUSD: "0.0050"}}
	for i := 1; i < 24; i++ {
		c := a
		if i%2 == 1 {
			c = b
		}
		msgs = append(msgs, Msg{Wait: 800 * time.Millisecond, Calls: []Call{c}, Stop: "tool_use",
			In: 1500 + 50*i, Out: 30, CostUSD: "0.0052"})
	}
	msgs = append(msgs, Msg{Wait: 1 * sec, Every: 80 * time.Millisecond,
		Text: words("The loader and its test agree."), Stop: "end", In: 3000, Out: 20, CostUSD: "0.0095"})
	return Script{Name: "cycle", Prompt: "Check that the config loader is tested.", Result: true, Msgs: msgs}
}

// repeatedErrors runs a different command each time and gets the same error back:
// the identical-call streak never grows, repeated errors trips at the 6th.
func repeatedErrors() Script {
	fail := "error: cannot connect to the database at localhost:5432: connection refused\n"
	var msgs []Msg
	for i := 0; i < 10; i++ {
		m := Msg{Wait: 1 * sec, Every: 80 * time.Millisecond,
			Calls: []Call{{Kind: Shell, Command: fmt.Sprintf("make migrate STEP=%d", i+1), Output: fail, Failed: true, Took: 300 * time.Millisecond}},
			Stop:  "tool_use", In: 1600 + 80*i, Out: 40, CostUSD: "0.0056"}
		if i == 0 {
			m.Text = words("Running the migrations one step at a time.")
		}
		msgs = append(msgs, m)
	}
	msgs = append(msgs, Msg{Wait: 1 * sec, Every: 80 * time.Millisecond,
		Text: words("The database is not reachable."), Stop: "end", In: 2500, Out: 20, CostUSD: "0.0080"})
	return Script{Name: "repeatedErrors", Prompt: "Apply the pending migrations.", Result: true, Msgs: msgs}
}

// repetition streams the same sentence over and over (what Gemini CLI and Roo
// Code call a content loop): about 6 KB of it, then stops.
func repetition() Script {
	text := words(strings.Repeat("I will check the configuration file again to be sure. ", 110))
	return Script{
		Name:   "repetition",
		Prompt: "Is the config file valid?",
		Result: true,
		Msgs: []Msg{
			{Wait: 1 * sec, Every: 80 * time.Millisecond,
				Text:  words("Reading the config file."),
				Calls: []Call{{Kind: Read, Path: "config.yaml", Output: "port: 8080\n", Took: 100 * time.Millisecond}},
				Stop:  "tool_use", In: 1500, Out: 40, CostUSD: "0.0050"},
			{Wait: 1 * sec, Every: 10 * time.Millisecond, Text: text,
				Stop: "end", In: 1700, Out: 1500, CostUSD: "0.0280"},
		},
	}
}
