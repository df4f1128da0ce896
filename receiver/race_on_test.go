//go:build race

package receiver

// raceEnabled scales heavy tests down under the race detector.
const raceEnabled = true
