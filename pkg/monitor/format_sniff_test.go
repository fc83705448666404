package monitor

import "testing"

// Every format New accepts (but auto) has a parser and recognises its own
// lines for auto.
func TestEveryFormatSniffs(t *testing.T) {
	sniffs := map[string]bool{}
	for _, f := range formatSniffs {
		sniffs[f.format] = true
	}
	for _, f := range Formats {
		if f == FormatAuto {
			continue
		}
		if !sniffs[f] {
			t.Errorf("format %s has no sniff in formatSniffs: auto never picks it", f)
		}
		if parsers[f] == nil {
			t.Errorf("format %s has no parser", f)
		}
	}
}

// formatFit counts one bucket per format auto sniffs.
func TestFormatFitHasABucketPerFormat(t *testing.T) {
	if n := len(formatFit{}.Counts); n != len(formatSniffs) {
		t.Errorf("formatFit counts %d formats, formatSniffs has %d", n, len(formatSniffs))
	}
}
