package main

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"printgate/internal/apispec"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// goroutine has an owner that stops it (docs/DESIGN.md, invariant 6).
func TestMain(m *testing.M) {
	// Every answer of the real binary's API the tests read through
	// http.DefaultClient (http.Get, http.DefaultClient.Do) must be one
	// docs/openapi.yaml describes; a violation fails the run.
	v, err := apispec.CheckDefaultClient()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// The in-process demo runs the agent, whose rotating log file starts
	// lumberjack's mill goroutine; lumberjack offers no way to stop it.
	goleak.VerifyTestMain(v.Wrap(m), goleak.IgnoreTopFunction("gopkg.in/natefinch/lumberjack%2ev2.(*Logger).millRun"))
}
