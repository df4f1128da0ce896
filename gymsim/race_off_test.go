//go:build !race

package gymsim

const raceOn = false
