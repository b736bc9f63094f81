//go:build unix

package message

import (
	"syscall"
	"testing"
	"time"
)

// cpuPerOp starts counting the process's CPU time; the function it
// returns reports it per operation as cpu-ns/op.
func cpuPerOp(b *testing.B) func() {
	start := cpuTime()
	return func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
