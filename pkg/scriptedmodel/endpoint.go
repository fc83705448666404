package scriptedmodel

// Endpoint is where a CLI, run as its config/samples/cli_*.yaml runs it,
// reads its model endpoint: the env var, and the path the CLI expects after
// the server's address (codex and opencode append their API's path to a
// base that ends in /v1). The tests point each sample at a scripted model
// with it, and so will the drill.
type Endpoint struct {
	// Env is the env var naming the endpoint.
	Env string
	// Suffix is appended to the server's URL.
	Suffix string
}

// Endpoints holds each format's Endpoint.
var Endpoints = map[string]Endpoint{
	"claude":   {"ANTHROPIC_BASE_URL", ""},
	"codex":    {"OPENAI_BASE_URL", "/v1"},
	"gemini":   {"GOOGLE_GEMINI_BASE_URL", ""},
	"opencode": {"ANTHROPIC_BASE_URL", "/v1"},
	"pi":       {"ANTHROPIC_BASE_URL", ""},
}
