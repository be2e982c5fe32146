package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// goroutine has an owner that stops it (DESIGN.md "Invariants" 6).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
