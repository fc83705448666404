//go:build !turnwatch_nodrill

package main

import "testing"

func TestModelListensOnLoopbackOnly(t *testing.T) {
	tests := []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:0", true},
		{"127.0.0.9:8080", true},
		{"[::1]:0", true},
		{"0.0.0.0:8080", false},
		{":8080", false},
		{"10.0.0.1:80", false},
		{"localhost:80", false}, // a name could resolve anywhere
		{"127.0.0.1", false},
	}
	for _, tt := range tests {
		if err := loopbackOnly(tt.addr); (err == nil) != tt.ok {
			t.Errorf("loopbackOnly(%q) = %v, want ok %v", tt.addr, err, tt.ok)
		}
	}
}
