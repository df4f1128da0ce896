//go:build race

package main

// raceEnabled scales heavy tests down under the race detector.
const raceEnabled = true
