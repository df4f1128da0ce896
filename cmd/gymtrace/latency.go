package main

import (
	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/gate/whatif"
)

// latencyJSON is the latency object of `preview --json`.
type latencyJSON = report.Latency

func latencyOut(l *whatif.Latency) latencyJSON { return report.LatencyOf(l) }
