//go:build unix

package main

import "syscall"

// raiseOpenFiles raises the soft open-file limit to the hard one (Go's
// runtime does too since 1.19; being explicit keeps it when that changes)
// and returns the limits the process runs with.
func raiseOpenFiles() (soft, hard uint64, err error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, err
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = raised.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			lim = raised
		}
	}
	return uint64(lim.Cur), uint64(lim.Max), nil
}
