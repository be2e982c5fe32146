package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"printgate/agent/config"
)

// TestTokenCommand ensures `printgate token` prints a fresh token long
// enough for the config, a different one each time, and nothing else.
func TestTokenCommand(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		var out, errb bytes.Buffer
		if code := dispatch([]string{"token"}, &out, &errb); code != 0 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		tok := strings.TrimSuffix(out.String(), "\n")
		if len(tok) < config.MinTokenLength || strings.ContainsAny(tok, " \n=") || seen[tok] {
			t.Errorf("token %q: want a fresh one of at least %d characters", tok, config.MinTokenLength)
		}
		seen[tok] = true
		cfg := "api_token = \"" + tok + "\"\n[[printers]]\nname = \"k\"\nurl = \"tcp://127.0.0.1:9\"\n"
		if _, err := config.Parse("t.toml", []byte(cfg)); err != nil {
			t.Errorf("the config refuses the generated token: %v", err)
		}
	}
	var out, errb bytes.Buffer
	if code := dispatch([]string{"token", "extra"}, &out, &errb); code != 2 {
		t.Errorf("token with an argument: exit %d, want 2", code)
	}
}

// TestTokenOutFile: `printgate token --out FILE` writes a fresh token the
// config accepts, readable by its owner only, also over a file that was
// readable by everyone (`printgate token > FILE` made it 0644).
func TestTokenOutFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "api-token.txt")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := dispatch([]string{"token", "--out", path}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "wrote a new API token to "+path) {
		t.Errorf("stdout %q", out.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSuffix(string(b), "\n")
	if tok == "old" || len(tok) < config.MinTokenLength {
		t.Errorf("file holds %q, want a fresh token", b)
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("token file is %04o, want 0600", perm)
		}
	}
	if _, err := os.Stat(path + ".new"); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}
	errb.Reset()
	if code := dispatch([]string{"token", "--out", filepath.Join(t.TempDir(), "no", "such", "dir", "t.txt")}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "fix:") {
		t.Errorf("unwritable --out: exit %d, stderr %q; want 1 with a fix line", code, errb.String())
	}
}
