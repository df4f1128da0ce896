package main

import (
	"fmt"
	"os"
)

func cmdGroups(args []string) int {
	fmt.Fprintln(os.Stderr, "gymtrace groups: not built yet")
	return exitUsage
}
