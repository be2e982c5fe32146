package daemon

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them:
// RunService owns every goroutine it starts (the listener, the link, the
// maintenance and SIGHUP loops) and waits for each before it returns.
func TestMain(m *testing.M) {
	// lumberjack's mill goroutine outlives Close by design (one per log
	// file for the life of the process; natefinch/lumberjack#56).
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("gopkg.in/natefinch/lumberjack%2ev2.(*Logger).millRun"))
}
