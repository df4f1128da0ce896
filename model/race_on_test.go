//go:build race

package model

// raceEnabled scales the heavy shape tests down under the race detector,
// which slows the writer about tenfold.
const raceEnabled = true
