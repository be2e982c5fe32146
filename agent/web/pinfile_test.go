package web

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"printgate/internal/fileowner"
)

// TestPINFileErrorSaysTheFix ensures an unreadable PIN file yields a message
// the login page can show as it is: the file, the reason and the chown that
// fixes it, not a bare "internal error" at every login.
func TestPINFileErrorSaysTheFix(t *testing.T) {
	path := filepath.Join("/var/lib/printgate", PINFile)
	err := error(&PINFileError{Path: path, Err: &fs.PathError{Op: "open", Path: path, Err: fs.ErrPermission}})
	want := "cannot read the manager PIN file " + path + ": permission denied. fix: " +
		fileowner.ChownFix(path, fileowner.Current()) + " (the account the agent runs as), or set the PIN again with sudo printgate pin set"
	if err.Error() != want {
		t.Errorf("message\n got %q\nwant %q", err, want)
	}
	if !errors.Is(err, fs.ErrPermission) || errors.Is(err, ErrNoPIN) {
		t.Errorf("errors.Is does not see the cause")
	}

	// The real thing, where mode bits bind (not root).
	if os.Geteuid() == 0 || runtime.GOOS == "windows" {
		return
	}
	dir := t.TempDir()
	if err := SetPIN(dir, "246810"); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(PINPath(dir), 0); err != nil {
		t.Fatal(err)
	}
	_, err = LoadPIN(dir)
	var pe *PINFileError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "permission denied. fix: sudo chown ") {
		t.Errorf("LoadPIN of an unreadable file: %v", err)
	}
}
