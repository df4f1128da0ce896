//go:build race

package e2e

// raceOn: under the race detector, which slows the fleet tenfold, the
// seed loops run their short counts.
const raceOn = true
