package localapi_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"printgate/internal/apispec"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// goroutine has an owner that stops it (docs/DESIGN.md, invariant 6); and if
// an answer read through http.DefaultClient is not one docs/openapi.yaml
// describes (in-process answers are checked by checkAnswer).
func TestMain(m *testing.M) {
	v, err := apispec.CheckDefaultClient()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	goleak.VerifyTestMain(v.Wrap(m))
}
