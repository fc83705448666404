package nudgefile

import "embed"

// Adapters are turnwatch's hook files for the CLIs that take a plugin
// rather than a command hook (docs/nudges.md): the sidecar writes each at
// Dir/<name>, where a template points its CLI. Each runs turnwatch-hook
// --cli adapter.
//
//go:embed adapters/*.js
var Adapters embed.FS

// Adapter file names in Dir.
const (
	OpencodePlugin = "opencode-plugin.js"
	PiExtension    = "pi-extension.js"
)
