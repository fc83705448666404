package monitor

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestPlainDecimalAgrees: the fast reading of plain decimals gives what
// the general one gives, for every spelling it accepts, and accepts the
// common ones.
func TestPlainDecimalAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	cases := []string{"0", "5", "0.0", "0.002314", "999999.999999999999", "12.5", "007", "1.000000000001",
		"0.0023140000000000003", "0.0000000000005", "0.0000000000015", "0.00000000000050001", "999999.9999999999995", "1.2345678901234567890123"}
	for n := 0; n < 100000; n++ {
		var s string
		for k := 0; k < 1+r.IntN(22); k++ {
			s += string("0123456789.-e+"[min(r.IntN(16), 13)])
		}
		cases = append(cases, s, fmt.Sprintf("%d.%d", r.IntN(2000000), r.Uint64()%1e14),
			fmt.Sprintf("%d.%0*d", r.IntN(3), 1+r.IntN(20), r.Uint64()%1e19), fmt.Sprint(r.Float64()*float64(r.IntN(1000))))
	}
	accepted := 0
	for _, c := range cases {
		got, ok := plainDecimal([]byte(c))
		if !ok {
			continue
		}
		accepted++
		want, wok := parseDecimalSlow([]byte(c))
		if !wok || got != want {
			t.Fatalf("plainDecimal(%q) = %v, parseDecimalSlow: %v %v", c, got, want, wok)
		}
	}
	for _, c := range []string{"0", "0.002314", "12.5", "999999.999999999999", "0.0023140000000000003"} {
		if _, ok := plainDecimal([]byte(c)); !ok {
			t.Fatalf("plainDecimal(%q) not read", c)
		}
	}
	if accepted < 1000 {
		t.Fatalf("only %d inputs took the fast path", accepted)
	}
}
