// Command turnwatch-sidecar is the in-Pod watchdog and its offline twins
// (replay, watch).
package main

func main() {}
