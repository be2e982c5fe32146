package logring

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: a tail
// runs on its caller's goroutine and must return when its context ends
// (docs/DESIGN.md, invariant 6).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
