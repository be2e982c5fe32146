package spool

import "os"

// endedByKill reports that the process ended as Process.Kill ends it on
// Windows: TerminateProcess with exit code 1. Windows has no signals, so a
// child that exits 1 by itself looks the same; the caller also checks that
// it did kill it.
func endedByKill(ps *os.ProcessState) bool { return ps.ExitCode() == 1 }
