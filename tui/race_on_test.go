//go:build race

package tui

// raceEnabled scales heavy tests down under the race detector.
const raceEnabled = true
