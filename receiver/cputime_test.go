package receiver

import "syscall"

// cpuNow is the process's user and system CPU time in nanoseconds: on a
// machine whose cores other work shares, wall time measures the share a
// benchmark got, CPU time what the work costs.
func cpuNow() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}
