package main

import (
	"fmt"
	"os"
)

func cmdPreview(args []string) int {
	fmt.Fprintln(os.Stderr, "gymtrace preview: not built yet")
	return exitUsage
}
