package main

import (
	"fmt"
	"os"
)

func cmdOpen(args []string) int {
	fmt.Fprintln(os.Stderr, "gymtrace open: not built yet")
	return exitUsage
}
