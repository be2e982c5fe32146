package agent

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// goroutine has an owner that stops it (docs/DESIGN.md, invariant 6).
func TestMain(m *testing.M) {
	// lumberjack's mill goroutine outlives Close by design (one per log
	// file for the life of the process; natefinch/lumberjack#56).
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("gopkg.in/natefinch/lumberjack%2ev2.(*Logger).millRun"))
}
