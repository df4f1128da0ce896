package main

import (
	"fmt"
	"os"
)

func cmdCheck(args []string) int {
	fmt.Fprintln(os.Stderr, "gymtrace check: not built yet")
	return exitUsage
}
