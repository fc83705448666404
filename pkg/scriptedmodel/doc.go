// Package scriptedmodel is turnwatch's scripted model: an HTTP server that
// speaks the streaming APIs the five agent CLIs use and plays a named
// scenario (a healthy task, a loop, a whitespace spiral, an API error, ...)
// instead of thinking. It serves Anthropic Messages (claude, pi, opencode),
// OpenAI Responses (codex), OpenAI Chat Completions (opencode, pi) and
// Gemini streamGenerateContent (gemini), all over SSE, and logs every
// request it gets so a test can assert what the model was told.
//
// It is stateless per request: the reply depends only on the scenario and
// on the conversation the request carries (how many tool answers follow the
// last prompt), so a CLI that retries, restarts or resumes a conversation
// gets the same next step. Requests that offer no tools (titles, summaries,
// a CLI's own checks) get a short plain answer and are logged as side
// requests.
//
// The tests here run the real CLIs against it (test/realcli), and the
// sidecar binary serves it (turnwatch-sidecar model) for the drill.
package scriptedmodel
