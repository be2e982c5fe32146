package installer

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestServiceArguments ensures the Windows service's registered command
// line says it is the service (run --service), so the agent never has to
// guess; on Linux systemd runs plain `run`.
func TestServiceArguments(t *testing.T) {
	got := ServiceArguments(`C:\ProgramData\printgate\printgate.toml`)
	want := []string{"run", "--config", `C:\ProgramData\printgate\printgate.toml`}
	if runtime.GOOS == "windows" {
		want = []string{"run", "--service", "--config", `C:\ProgramData\printgate\printgate.toml`}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ServiceArguments = %q, want %q", got, want)
	}
}

// TestRecoveryFailure ensures a recovery call the service manager does not
// implement (Wine) is a warning naming the call, and any other failure
// stays an install error.
func TestRecoveryFailure(t *testing.T) {
	cause := errors.New("Invalid level.")
	warning, err := RecoveryFailure("SetRecoveryActionsOnNonCrashFailures", cause, true)
	if err != nil || !strings.Contains(warning, "SetRecoveryActionsOnNonCrashFailures") || !strings.HasPrefix(warning, "warning:") {
		t.Fatalf("not implemented: warning %q, err %v; want a warning naming the call", warning, err)
	}
	warning, err = RecoveryFailure("SetRecoveryActions", cause, false)
	if err == nil || warning != "" || !errors.Is(err, cause) || !strings.Contains(err.Error(), "SetRecoveryActions") {
		t.Fatalf("a real failure: warning %q, err %v; want an error naming the call", warning, err)
	}
}
