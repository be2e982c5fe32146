package console

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// goroutine has an owner that stops it (docs/DESIGN.md, invariant 6).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
