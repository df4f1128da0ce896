// Package cputime measures what benchmarks cost in CPU time: on a machine
// whose cores other work shares, wall time measures the share a benchmark
// got, CPU time what the work costs.
package cputime

import (
	"syscall"
	"testing"
)

// Now is the process's user and system CPU time in nanoseconds.
func Now() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// Timer starts counting; the function it returns reports the CPU time per
// op beside b's wall time, as cpu-ms/op.
func Timer(b *testing.B) func() {
	c0 := Now()
	return func() { b.ReportMetric(float64(Now()-c0)/1e6/float64(b.N), "cpu-ms/op") }
}
