package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestDispatchExitCodes ensures the documented exit codes: 2 for usage errors,
// 0 for help and for a successful command.
func TestDispatchExitCodes(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch([]string{"no-such-command"}, &out, &errb); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
	if !strings.Contains(errb.String(), `unknown command "no-such-command"`) {
		t.Errorf("unknown command message missing: %q", errb.String())
	}
	out.Reset()
	if code := dispatch([]string{"--help"}, &out, &errb); code != 0 {
		t.Errorf("--help: exit %d, want 0", code)
	}
	if !strings.Contains(out.String(), "version") {
		t.Errorf("help does not list the version command: %q", out.String())
	}
	out.Reset()
	if code := dispatch([]string{"version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "printgate ") {
		t.Errorf("version: exit %d output %q", code, out.String())
	}
}
