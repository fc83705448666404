// Command turnwatch is the turnwatch operator's manager.
package main

func main() {}
