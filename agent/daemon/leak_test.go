package daemon

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"printgate/internal/apispec"
)

// TestMain fails the package's tests if any goroutine outlives them:
// RunService owns every goroutine it starts (the listener, the link, the
// maintenance and SIGHUP loops) and waits for each before it returns.
func TestMain(m *testing.M) {
	// lumberjack's mill goroutine outlives Close by design (one per log
	// file for the life of the process; natefinch/lumberjack#56).
	// Every answer of the daemon's API the tests read through
	// http.DefaultClient must be one docs/openapi.yaml describes.
	v, err := apispec.CheckDefaultClient()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	goleak.VerifyTestMain(v.Wrap(m), goleak.IgnoreTopFunction("gopkg.in/natefinch/lumberjack%2ev2.(*Logger).millRun"))
}
