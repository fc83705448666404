// Command chartguards writes the chart's guards from the detector table
// (pkg/monitor/detectors.go): the `guards:` block of values.yaml (each
// guard's help line and default) and the `guards` object of
// values.schema.json (each guard's schema, from its kind and range). `make
// chart-sync` runs it; `make verify-generated` fails when either is stale.
//
//	go run ./hack/chartguards [CHART_DIR]
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
	"turnwatch.dev/turnwatch/pkg/monitor"
)

func main() {
	chart := "charts/turnwatch"
	if len(os.Args) > 1 {
		chart = os.Args[1]
	}
	guards := monitor.AllGuards()
	for _, f := range []struct {
		name    string
		rewrite func([]byte, []monitor.Guard) ([]byte, error)
	}{
		{"values.yaml", spliceValues},
		{"values.schema.json", spliceSchema},
	} {
		if err := rewriteFile(filepath.Join(chart, f.name), guards, f.rewrite); err != nil {
			fmt.Fprintf(os.Stderr, "chartguards: %s: %v\n", f.name, err)
			os.Exit(1)
		}
	}
}

func rewriteFile(path string, guards []monitor.Guard, rewrite func([]byte, []monitor.Guard) ([]byte, error)) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := rewrite(old, guards)
	if err != nil || bytes.Equal(out, old) {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

// spliceValues replaces the top-level `guards:` mapping of values.yaml (up
// to the first line that is not indented) with one help line and the
// default of each guard. The comments above `guards:` stay as written.
func spliceValues(src []byte, guards []monitor.Guard) ([]byte, error) {
	lines := strings.SplitAfter(string(src), "\n")
	start := -1
	for i, l := range lines {
		if l == "guards:\n" {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, errors.New("no top-level guards: line")
	}
	end := start + 1
	for end < len(lines) && strings.HasPrefix(lines[end], "  ") {
		end++
	}
	var b strings.Builder
	b.WriteString("guards:\n")
	for _, gd := range guards {
		fmt.Fprintf(&b, "  # -- %s\n  %s: %s\n", gd.Help, gd.Name, valueOf(gd))
	}
	return []byte(strings.Join(lines[:start], "") + b.String() + strings.Join(lines[end:], "")), nil
}

// valueOf writes a guard's default as values.yaml holds it.
func valueOf(gd monitor.Guard) string {
	v, ok := gd.Default()
	switch {
	case !ok && gd.Kind == monitor.GuardTools:
		return "[]"
	case !ok:
		return `""`
	}
	if d, isDuration := v.(monitor.Duration); isDuration {
		return d.Short()
	}
	return fmt.Sprint(v)
}

// spliceSchema replaces the value of the top-level properties.guards of
// values.schema.json, keeping the rest of the file byte for byte.
func spliceSchema(src []byte, guards []monitor.Guard) ([]byte, error) {
	from, to, err := guardsSpan(src)
	if err != nil {
		return nil, err
	}
	line := src[bytes.LastIndexByte(src[:from], '\n')+1 : from] // `    "guards": `
	indent := line[:len(line)-len(bytes.TrimLeft(line, " "))]
	obj, err := guardsSchema(guards)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, obj, string(indent), "  "); err != nil {
		return nil, err
	}
	return append(append(append([]byte{}, src[:from]...), out.Bytes()...), src[to:]...), nil
}

// guardsSpan finds the bytes of the value of properties.guards.
func guardsSpan(src []byte) (from, to int, err error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	if err := expectDelim(dec, '{'); err != nil {
		return 0, 0, err
	}
	if err := seekKey(dec, "properties"); err != nil {
		return 0, 0, err
	}
	if err := expectDelim(dec, '{'); err != nil {
		return 0, 0, err
	}
	if err := seekKey(dec, "guards"); err != nil {
		return 0, 0, err
	}
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return 0, 0, err
	}
	to = int(dec.InputOffset())
	return to - len(raw), to, nil
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("want %v, got %v", d, tok)
	}
	return nil
}

// seekKey reads the keys of the object being read, skipping their values,
// up to key.
func seekKey(dec *json.Decoder, key string) error {
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if tok == key {
			return nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	return fmt.Errorf("no key %q", key)
}

// guardsSchema is the schema of the guards object: every guard of the table
// and nothing else.
func guardsSchema(guards []monitor.Guard) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"type":"object","additionalProperties":false,"properties":{`)
	for i, gd := range guards {
		s, err := json.Marshal(schemaOf(gd))
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%s", gd.Name, s)
	}
	b.WriteString(`}}`)
	return b.Bytes(), nil
}

// schema is the part of JSON Schema the guards use, its fields in the order
// they are written.
type schema struct {
	Type        string   `json:"type,omitempty"`
	Pattern     string   `json:"pattern,omitempty"`
	MinLength   int      `json:"minLength,omitempty"`
	MaxLength   int      `json:"maxLength,omitempty"`
	Minimum     *int     `json:"minimum,omitempty"`
	Const       *int     `json:"const,omitempty"`
	Enum        []string `json:"enum,omitempty"`
	MaxItems    int      `json:"maxItems,omitempty"`
	UniqueItems bool     `json:"uniqueItems,omitempty"`
	Items       *schema  `json:"items,omitempty"`
	AnyOf       []schema `json:"anyOf,omitempty"`
}

// The API's patterns and bounds (the markers hack/apitables writes into
// api/v1alpha1/zz_generated.guards.go), which the chart's schema keeps: a
// Go duration; one bounded under a minute (refuseWait) is written in
// seconds at most; a decimal cost, or a number as --set writes one; at most
// 64 world tools of at most 256 bytes.
const (
	durationPattern = twv1.DurationPattern
	secondsPattern  = twv1.SecondsPattern
	costPattern     = `^([0-9]{1,9}(\.[0-9]{1,9})?)?$`
)

// schemaOf is a guard's schema, from its kind and range. JSON Schema cannot
// compare durations: a Most is checked by the manager at start (the charts'
// TestSchemaAgreesWithGuardValidator lists the gap).
func schemaOf(gd monitor.Guard) schema {
	zero := 0
	switch gd.Kind {
	case monitor.GuardCount:
		if least := gd.Least; least > 1 {
			return schema{Type: "integer", AnyOf: []schema{{Const: &zero}, {Minimum: &least}}}
		}
		return schema{Type: "integer", Minimum: &zero}
	case monitor.GuardDuration:
		if gd.Most > 0 && gd.Most < time.Minute {
			return schema{Type: "string", Pattern: secondsPattern, MaxLength: twv1.SecondsMaxLength}
		}
		return schema{Type: "string", Pattern: durationPattern, MaxLength: twv1.DurationMaxLength}
	case monitor.GuardBool:
		return schema{Type: "boolean"}
	case monitor.GuardChoice:
		return schema{Type: "string", Enum: gd.Choices}
	case monitor.GuardCost:
		return schema{AnyOf: []schema{{Type: "string", Pattern: costPattern}, {Type: "number", Minimum: &zero}}}
	case monitor.GuardTools:
		return schema{Type: "array", MaxItems: twv1.MaxWorldTools, UniqueItems: true,
			Items: &schema{Type: "string", MinLength: 1, MaxLength: twv1.MaxToolNameLength}}
	}
	panic("chartguards: guard " + gd.Name + " has no kind the chart knows")
}
