package main

import (
	"fmt"
	"os"
)

func cmdDemo(args []string) int {
	fmt.Fprintln(os.Stderr, "gymtrace demo: not built yet")
	return exitUsage
}
