package filter

import "github.com/nemo-gym/gymtrace/gate/internal/testfleet"

// Captures for the tests are built by testfleet.
type (
	fleet      = testfleet.Fleet
	kv         = testfleet.KV
	filterSpan = testfleet.Span
)

var (
	newFleet      = testfleet.NewFleet
	gymCapture    = testfleet.GymCapture
	filterCapture = testfleet.Capture
	threeRollouts = testfleet.ThreeRollouts
)
