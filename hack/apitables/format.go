package main

import (
	"fmt"
	"go/format"
	"strings"
	"unicode"
)

// apiFormat is the Format type: its +kubebuilder:validation:Enum marker
// lists every CLI's format, then auto (pkg/agents), and a constant per
// format.
func apiFormat(formats []string) ([]byte, error) {
	var b strings.Builder
	fmt.Fprintf(&b, header, "From the CLIs' table (pkg/agents/agents.go)")
	b.WriteString("\n// Format is the agent's stdout event format.\n")
	fmt.Fprintf(&b, "// +kubebuilder:validation:Enum=%s\ntype Format string\n\n", strings.Join(formats, ";"))
	b.WriteString("// Formats the sidecar reads: one per CLI of pkg/agents.CLIs, and auto.\nconst (\n")
	for _, f := range formats {
		fmt.Fprintf(&b, "\tFormat%s Format = %q\n", ident(f), f)
	}
	b.WriteString(")\n")
	return format.Source([]byte(b.String()))
}

// ident is a format's name as the tail of a Go identifier: each run of
// letters and digits with its first letter upper-cased (qwen-code: QwenCode).
func ident(name string) string {
	var b strings.Builder
	up := true
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
		}
		b.WriteRune(r)
		up = false
	}
	return b.String()
}
