package pair

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestTokenSaveLoadRemove ensures a saved token loads back, is readable by
// its owner only, replaces the one before, leaves no temporary file, and
// that an unpaired data dir (never paired, or after Remove) loads as
// os.ErrNotExist.
func TestTokenSaveLoadRemove(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data") // Save creates it
	if _, err := Load(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load before pairing: %v, want os.ErrNotExist", err)
	}
	for _, token := range []string{"tok-1", "tok-2.abc_DEF~+/="} {
		if err := Save(dir, token); err != nil {
			t.Fatal(err)
		}
		if got, err := Load(dir); err != nil || got != token {
			t.Fatalf("Load = %q, %v; want %q", got, err, token)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "device-token")); string(b) != "tok-2.abc_DEF~+/=\n" {
		t.Errorf("file holds %q", b)
	}
	fi, err := os.Stat(TokenPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("data dir holds %v, want only the token", names)
	}
	if err := Remove(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load after Remove: %v, want os.ErrNotExist", err)
	}
	if err := Remove(dir); err != nil {
		t.Errorf("Remove when unpaired: %v", err)
	}
}

// TestTokenSaveReplacesWhole ensures Save puts a new file in place instead
// of rewriting the old one: another link to the old file keeps the old
// token, so a reader never sees a file half rewritten.
func TestTokenSaveReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	if err := Save(dir, "old-token"); err != nil {
		t.Fatal(err)
	}
	witness := filepath.Join(t.TempDir(), "witness")
	if err := os.Link(TokenPath(dir), witness); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	if err := Save(dir, "new-token"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(witness); string(b) != "old-token\n" {
		t.Errorf("the old file was rewritten in place: it now holds %q", b)
	}
	if got, _ := Load(dir); got != "new-token" {
		t.Errorf("Load = %q", got)
	}
}

// TestTokenSaveFails ensures a Save that cannot finish reports it, leaves
// what was there alone and cleans up its temporary file; and that tokens
// that could not travel in a header or sit on one line are refused.
func TestTokenSaveFails(t *testing.T) {
	dir := t.TempDir()
	// A folder where the token goes makes the final rename fail.
	if err := os.MkdirAll(filepath.Join(TokenPath(dir), "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Save(dir, "tok"); err == nil || !strings.Contains(err.Error(), "save the device token") {
		t.Errorf("Save over a folder: %v", err)
	}
	if names := dirNames(t, dir); len(names) != 1 || names[0] != TokenFile {
		t.Errorf("after a failed Save the data dir holds %v", names)
	}

	dir = t.TempDir()
	if err := Save(dir, "good"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "two words", "line\nbreak", "tab\t", "é", strings.Repeat("x", MaxTokenLen+1)} {
		if err := Save(dir, bad); err == nil {
			t.Errorf("Save(%q) accepted", bad)
		}
	}
	if got, _ := Load(dir); got != "good" {
		t.Errorf("a refused token replaced the saved one: %q", got)
	}
	os.WriteFile(TokenPath(dir), []byte("\n"), 0o600)
	if _, err := Load(dir); err == nil || errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "run printgate pair again") {
		t.Errorf("Load of an empty file: %v", err)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
