//go:build !windows

package spool

import (
	"os"
	"syscall"
)

// endedByKill reports that the process ended by SIGKILL (Process.Kill).
func endedByKill(ps *os.ProcessState) bool {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}
