package gateway

import (
	"net/http"
	"slices"
	"strings"

	"turnwatch.dev/turnwatch/pkg/modelapi"
)

// credential is a header a client may put a model key in.
type credential struct{ name, prefix string }

// credentials are the headers stripped from every request: each API's own
// (modelapi.APIs) and Azure OpenAI's api-key, which OpenAI clients may send.
var credentials = func() []credential {
	out := []credential{{"Api-Key", ""}}
	for _, a := range modelapi.APIs {
		c := credential{http.CanonicalHeaderKey(a.KeyHeader), a.KeyPrefix}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}()

// keyParam is the query parameter Gemini clients may put the key in.
const keyParam = "key"

// takeCredentials removes every credential from r (the headers and the key
// query parameter) and returns the keys it carried, and the header the
// first came in.
func takeCredentials(r *http.Request) (keys []string, where credential) {
	for _, c := range credentials {
		for _, v := range r.Header.Values(c.name) {
			if c.prefix != "" && len(v) >= len(c.prefix) && strings.EqualFold(v[:len(c.prefix)], c.prefix) {
				v = v[len(c.prefix):]
			}
			keys = append(keys, strings.TrimSpace(v))
			if where.name == "" {
				where = c
			}
		}
		r.Header.Del(c.name)
	}
	if strings.Contains(r.URL.RawQuery, keyParam+"=") {
		q := r.URL.Query()
		if q.Has(keyParam) {
			keys = append(keys, q[keyParam]...)
			q.Del(keyParam)
			r.URL.RawQuery = q.Encode()
			if where.name == "" {
				where = credential{http.CanonicalHeaderKey(modelapi.Gemini.KeyHeader), ""}
			}
		}
	}
	return keys, where
}

// allEqual says whether every key is token (true for none).
func allEqual(keys []string, token string) bool {
	for _, k := range keys {
		if k != token {
			return false
		}
	}
	return true
}
