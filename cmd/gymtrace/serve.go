package main

import (
	"fmt"
	"os"
)

func cmdServe(args []string) int {
	fmt.Fprintln(os.Stderr, "gymtrace serve: not built yet")
	return exitUsage
}
