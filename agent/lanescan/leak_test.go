package lanescan

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a scan leaves a goroutine behind:
// ScanTCP's workers end before Scan returns.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
