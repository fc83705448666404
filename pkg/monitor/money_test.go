package monitor

import (
	"math"
	"testing"
)

func TestParseMoney(t *testing.T) {
	tests := []struct {
		in, out string
		ok      bool
	}{
		{"0", "0.00", true},
		{"5", "5.00", true},
		{"5.00", "5.00", true},
		{"0.000192", "0.000192", true},
		{"1.5e-7", "0.00000015", true},
		{"1.5E+2", "150.00", true},
		{"0.30000000000000004", "0.30", true}, // JS float noise past 12 places rounds away
		{"0.0000000000005", "0.00", true},     // half to even
		{"0.0000000000015", "0.000000000002", true},
		{"-0.25", "-0.25", true},
		{"1e30", "9223372.036854775807", true}, // saturates
		{"", "", false}, {".", "", false}, {"1.", "", false}, {"1e", "", false}, {"abc", "", false}, {"1.2.3", "", false},
	}
	for _, tt := range tests {
		m, err := ParseMoney(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("%q: err %v", tt.in, err)
			continue
		}
		if tt.ok && m.String() != tt.out {
			t.Errorf("%q: %s, want %s", tt.in, m, tt.out)
		}
	}
}

func TestMoneyArithmetic(t *testing.T) {
	a, _ := ParseMoney("0.1")
	b, _ := ParseMoney("0.2")
	if a.Add(b).String() != "0.30" {
		t.Errorf("0.1+0.2 = %s", a.Add(b))
	}
	if Money(math.MaxInt64).Add(1) != math.MaxInt64 {
		t.Error("Add must saturate")
	}
	p, _ := ParseMoney("3")
	if got := mulTokens(123, p).String(); got != "0.000369" {
		t.Errorf("123 tokens at $3/MTok = %s", got)
	}
	if mulTokens(math.MaxInt64, p) != math.MaxInt64 {
		t.Error("mulTokens must saturate")
	}
}
