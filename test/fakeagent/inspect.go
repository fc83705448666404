package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Inspection is what the agent can see of the nudges volume and of the
// sidecar's credential, told in its last message so that the e2e test reads
// it from the log (the agent container is the one place that knows).
type Inspection struct {
	// Files are the regular files under the directory, by relative path,
	// with their mode.
	Files map[string]string `json:"files"`
	// Nudges is nudges.jsonl as the agent reads it.
	Nudges string `json:"nudges"`
	// TokenLike names the files that hold something like a JWT (a bearer
	// token starts with "eyJ").
	TokenLike []string `json:"tokenLike"`
	// TokenReadable is true when the service-account token path can be read
	// from the agent container.
	TokenReadable bool `json:"tokenReadable"`
}

const saToken = "/var/run/secrets/kubernetes.io/serviceaccount/token"

func inspectDir(dir string) string {
	in := Inspection{Files: map[string]string{}}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if fi, err := d.Info(); err == nil {
			in.Files[rel] = fi.Mode().String()
		}
		// The hook binary is the sidecar's own copy; a token would be data.
		if b, err := os.ReadFile(p); err == nil && !strings.HasPrefix(rel, "bin/") && strings.Contains(string(b), "eyJ") {
			in.TokenLike = append(in.TokenLike, rel)
		}
		return nil
	})
	if b, err := os.ReadFile(filepath.Join(dir, "nudges.jsonl")); err == nil {
		in.Nudges = string(b)
	}
	_, err := os.ReadFile(saToken)
	in.TokenReadable = err == nil
	b, _ := json.Marshal(in)
	return string(b)
}
