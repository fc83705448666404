package v1alpha1_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	twv1 "turnwatch.dev/turnwatch/api/v1alpha1"
)

// Every duration DurationPattern admits is one Go (and so CEL, whose
// duration() parses as Go does) reads; one that overflows is refused.
func TestDurationPatternReadable(t *testing.T) {
	re := regexp.MustCompile(twv1.DurationPattern)
	for _, c := range []struct {
		in       string
		admitted bool
	}{
		{"10m", true}, {"0s", true}, {"1h30m", true}, {"1.5s", true}, {"250ms", true}, {"99999h", true},
		{"99999.999999999h99999.999999999h99999.999999999h99999.999999999h", true},
		{"2562048h", false}, // past int64 nanoseconds: neither Go nor CEL reads it
		{"100000h", false}, {"1h1m1s1ms1us", false}, {"1d", false}, {"", false}, {"-1s", false}, {"1", false},
	} {
		if got := re.MatchString(c.in); got != c.admitted {
			t.Errorf("%q: admitted %v, want %v", c.in, got, c.admitted)
		}
		if _, err := time.ParseDuration(c.in); c.admitted && err != nil {
			t.Errorf("%q is admitted but Go cannot read it: %v", c.in, err)
		}
	}
	// Random admitted values, the largest numbers most often.
	units := []string{"ns", "us", "µs", "ms", "s", "m", "h"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var b strings.Builder
		for range 1 + r.IntN(4) {
			n := 99999 - r.IntN(3)*r.IntN(100000)/2
			b.WriteString(strconv.Itoa(max(n, 0)))
			if r.IntN(2) == 0 {
				b.WriteString("." + strconv.Itoa(r.IntN(1e9)))
			}
			b.WriteString(units[r.IntN(len(units))])
		}
		s := b.String()
		if !re.MatchString(s) {
			t.Fatalf("generated %q, which the pattern refuses", s)
		}
		if _, err := time.ParseDuration(s); err != nil {
			t.Fatalf("%q is admitted but Go cannot read it: %v", s, err)
		}
	}
}

// Every duration field of the CRDs holds DurationPattern (the markers
// repeat it: a marker cannot name a constant), but refuseWait's, which is
// written in seconds and bounded to 5s by its own rule.
func TestDurationFieldsPattern(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs: %v", err)
	}
	found := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd map[string]any
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatal(err)
		}
		walkPatterns(crd, "", func(path, pattern string) {
			if !strings.Contains(pattern, "ms|s") || strings.HasSuffix(path, ".refuseWait") {
				return
			}
			found++
			if pattern != twv1.DurationPattern {
				t.Errorf("%s %s: pattern %s, want DurationPattern %s", filepath.Base(f), path, pattern, twv1.DurationPattern)
			}
		})
	}
	// stallTimeout and toolTimeout of an AgentRun's guards, of a policy's
	// guards and limits (two kinds), and a policy's budget window.
	if found < 11 {
		t.Errorf("%d duration fields found, want at least 11", found)
	}
}

// walkPatterns calls f with every "pattern" of a schema and the path of
// its property.
func walkPatterns(v any, path string, f func(path, pattern string)) {
	switch v := v.(type) {
	case map[string]any:
		if p, ok := v["pattern"].(string); ok {
			f(path, p)
		}
		for k, c := range v {
			walkPatterns(c, path+"."+k, f)
		}
	case []any:
		for _, c := range v {
			walkPatterns(c, path, f)
		}
	}
}
