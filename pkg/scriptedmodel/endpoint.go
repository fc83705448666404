package scriptedmodel

// Endpoint is where a CLI, run as its config/samples/cli_*.yaml runs it,
// reads its model endpoint and key: the env vars, and the path the CLI
// expects after the server's address (codex and opencode append their
// API's path to a base that ends in /v1). The tests point each sample at a
// scripted model with it, and so does the drill (docs/drill.md).
type Endpoint struct {
	// Env is the env var naming the endpoint.
	Env string
	// Suffix is appended to the server's URL.
	Suffix string
	// Keys are the env vars the CLI reads its API key from; the drill
	// replaces each one a template sets, or adds the first.
	Keys []string
	// Config, when set, says why the CLI reads Env only through a config of
	// its own that the template must write from it (as the sample does):
	// without that, the endpoint cannot be pointed at the scripted model.
	// The controller and the admission policy turnwatch-agentrun-drill
	// refuse such a drill.
	Config string
}

// Endpoints holds each format's Endpoint.
var Endpoints = map[string]Endpoint{
	"claude": {Env: "ANTHROPIC_BASE_URL", Keys: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"}},
	"codex": {Env: "OPENAI_BASE_URL", Suffix: "/v1", Keys: []string{"CODEX_API_KEY", "OPENAI_API_KEY"},
		Config: "codex's built-in provider ignores it; the template needs a model provider whose base_url is $OPENAI_BASE_URL"},
	"gemini":   {Env: "GOOGLE_GEMINI_BASE_URL", Keys: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}},
	"opencode": {Env: "ANTHROPIC_BASE_URL", Suffix: "/v1", Keys: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}},
	"pi": {Env: "ANTHROPIC_BASE_URL", Keys: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY"},
		Config: "pi reads ~/.pi/agent/models.json and no endpoint env; the template must write it from $ANTHROPIC_BASE_URL"},
}
