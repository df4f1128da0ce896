//go:build race

package gymsim

// raceOn: the race detector slows the fleet tenfold; seed-heavy tests run
// fewer seeds under it (the race detector checks interleavings, not shapes).
const raceOn = true
