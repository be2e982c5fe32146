package main

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// TestVersionCommand ensures `version` prints one line with the OS/arch and
// Go release, `version --help` (and -h) prints its own usage instead of the
// version and exits 0, and an argument is a usage error (exit 2).
func TestVersionCommand(t *testing.T) {
	tests := []struct {
		args      []string
		code      int
		out, errs string // wanted substrings
		noVersion bool   // stdout must stay empty
	}{
		{[]string{"version"}, 0, " " + runtime.GOOS + "/" + runtime.GOARCH + " " + runtime.Version() + "\n", "", false},
		{[]string{"version", "--help"}, 0, "", "usage: printgate version\n", true},
		{[]string{"version", "-h"}, 0, "", "usage: printgate version\n", true},
		{[]string{"version", "extra"}, 2, "", `unexpected argument "extra"`, true},
		{[]string{"version", "--bogus"}, 2, "", "flag provided but not defined", true},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := dispatch(tt.args, &out, &errb)
		if code != tt.code || !strings.Contains(out.String(), tt.out) || !strings.Contains(errb.String(), tt.errs) {
			t.Errorf("%v: exit %d stdout %q stderr %q, want exit %d, %q on stdout, %q on stderr", tt.args, code, out.String(), errb.String(), tt.code, tt.out, tt.errs)
		}
		if tt.noVersion && out.Len() != 0 {
			t.Errorf("%v printed %q", tt.args, out.String())
		}
		if !tt.noVersion && (!strings.HasPrefix(out.String(), "printgate ") || strings.Count(out.String(), "\n") != 1) {
			t.Errorf("%v: %q is not one version line", tt.args, out.String())
		}
	}
}
