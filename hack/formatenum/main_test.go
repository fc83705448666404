package main

import (
	"strings"
	"testing"
)

func TestIdent(t *testing.T) {
	for name, want := range map[string]string{"pi": "Pi", "opencode": "Opencode", "qwen-code": "QwenCode", "cli_2": "Cli2"} {
		if got := ident(name); got != want {
			t.Errorf("ident(%q) = %q, want %q", name, got, want)
		}
	}
}

// The file holds the enum marker of every format, in order, and a
// constant of each; it is valid Go (render gofmts it).
func TestRender(t *testing.T) {
	src, err := render([]byte("/* header */\n"), []string{"pi", "qwen-code", "auto"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"/* header */\n",
		"// +kubebuilder:validation:Enum=pi;qwen-code;auto\ntype Format string\n",
		`FormatQwenCode Format = "qwen-code"`,
		`FormatAuto     Format = "auto"`,
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("rendered file lacks %q:\n%s", want, src)
		}
	}
}
