package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// goroutine has an owner that stops it (DESIGN.md "Invariants" 6).
func TestMain(m *testing.M) {
	// The in-process demo runs the agent, whose rotating log file starts
	// lumberjack's mill goroutine; lumberjack offers no way to stop it.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("gopkg.in/natefinch/lumberjack%2ev2.(*Logger).millRun"))
}
