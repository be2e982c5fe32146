package config

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestDefaultDataDir ensures the built-in config keeps its data in
// $XDG_STATE_HOME/printgate-hub, else ~/.local/state/printgate-hub, else
// (no home) ./printgate-hub-data as an absolute path, and listens on
// 127.0.0.1:8640.
func TestDefaultDataDir(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the Windows default is %LocalAppData%")
	}
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("HOME", filepath.Join(dir, "home"))
	if got, want := Default().DataDir, filepath.Join(dir, "state", "printgate-hub"); got != want {
		t.Errorf("with XDG_STATE_HOME: %s, want %s", got, want)
	}
	if Default().Listen != "127.0.0.1:8640" {
		t.Errorf("listen %s, want 127.0.0.1:8640", Default().Listen)
	}
	t.Setenv("XDG_STATE_HOME", "")
	if err := os.Mkdir(filepath.Join(dir, "home"), 0o700); err != nil {
		t.Fatal(err)
	}
	if got, want := Default().DataDir, filepath.Join(dir, "home", ".local", "state", "printgate-hub"); got != want {
		t.Errorf("with HOME: %s, want %s", got, want)
	}
	t.Setenv("HOME", filepath.Join(dir, "nonexistent"))
	t.Chdir(dir)
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Default().DataDir, filepath.Join(wd, "printgate-hub-data"); got != want {
		t.Errorf("without a home: %s, want %s", got, want)
	}
	if msg := CheckDefault(Default()); msg != "" {
		t.Errorf("the built-in config fails its own check: %s", msg)
	}
}
