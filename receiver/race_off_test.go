//go:build !race

package receiver

const raceEnabled = false
