//go:build !linux

package sidecar

// mapWords: the record outlives the process on Linux only (feeding_linux.go);
// elsewhere it lives in memory and a restart finds none.
func mapWords(string) (*[3]uint64, func() error, error) { return new([3]uint64), nil, nil }
