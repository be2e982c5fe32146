package config

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const appendBase = `# store config — keep this comment
data_dir = "data"
api_token = "append-test-token-0123456789"

# the kitchen printer
[[printers]]
name = "kitchen"   # by the grill
url = "tcp://127.0.0.1:9100"`

// TestAppendPrinterKeepsFile ensures the added printer parses, and every
// byte before it (comments, no final newline) is kept.
func TestAppendPrinterKeepsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "printgate.toml")
	if err := os.WriteFile(path, []byte(appendBase), 0o640); err != nil {
		t.Fatal(err)
	}
	cfg, err := AppendPrinter(path, "bar", "tcp://127.0.0.1:9101", []byte(appendBase))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if !bytes.HasPrefix(got, []byte(appendBase+"\n")) {
		t.Fatalf("the file before the new table changed:\n%s", got)
	}
	re, err := Load(path)
	if err != nil {
		t.Fatalf("appended file does not load: %v", err)
	}
	if p, ok := re.Printer("bar"); !ok || p.URL != "tcp://127.0.0.1:9101" || len(cfg.Printers) != 2 {
		t.Fatalf("bar not added: %+v", re.Printers)
	}
	// Windows has no mode bits (Go reports 0666 for any writable file).
	if st, _ := os.Stat(path); runtime.GOOS != "windows" && st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", st.Mode().Perm())
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*.tmp")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

// TestAppendPrinterRefuses ensures a bad name, a taken name, the same
// printer twice and a file changed meanwhile leave the file untouched.
func TestAppendPrinterRefuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "printgate.toml")
	if err := os.WriteFile(path, []byte(appendBase), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, url string }{
		{"bad name", "tcp://127.0.0.1:9101"},
		{"kitchen", "tcp://127.0.0.1:9101"},
		{"bar", "tcp://127.0.0.1:9100"},
		{"bar", "nope://x"},
	} {
		if _, err := AppendPrinter(path, c.name, c.url, nil); err == nil {
			t.Errorf("%s %s accepted", c.name, c.url)
		}
	}
	if _, err := AppendPrinter(path, "bar", "tcp://127.0.0.1:9101", []byte(strings.Replace(appendBase, "grill", "door", 1))); !errors.Is(err, ErrFileChanged) {
		t.Errorf("append over a changed file: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != appendBase {
		t.Fatalf("file changed:\n%s", got)
	}
}
