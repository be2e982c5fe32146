package demo

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestRemoveTreeFallback ensures the demo's directory is removed even when
// RemoveAll fails as it does under Wine ("Invalid function"): the fallback
// removes the files and folders one by one.
func TestRemoveTreeFallback(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	for _, f := range []string{"printgate.toml", "data/spool.db", "data/logs/agent.log", "data/empty/"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if f[len(f)-1] != '/' {
			if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	failing := func(string) error { return errors.New("unlinkat: Invalid function.") }
	if err := removeTree(dir, failing); err != nil {
		t.Fatalf("removeTree: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the directory is still there: %v", err)
	}
	if err := removeTree(dir, failing); err != nil {
		t.Fatalf("removeTree of a missing dir: %v", err)
	}
}
