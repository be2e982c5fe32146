package console

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"printgate/drivers/printertest"
)

// TestIsTerminal ensures the real check tells a terminal from a pipe, a
// file, the null device and a buffer, so `render ... | nc` and
// `render ... > ticket.bin` keep working and a pty (Linux) is refused.
func TestIsTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.Create(filepath.Join(t.TempDir(), "ticket.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	for name, w := range map[string]io.Writer{"pipe": w, "file": f, "null device": null, "buffer": &bytes.Buffer{}} {
		if IsTerminal(w) {
			t.Errorf("%s taken for a terminal", name)
		}
	}
	if runtime.GOOS != "linux" {
		return
	}
	p := printertest.New(printertest.Options{})
	defer p.Close()
	path, err := p.OpenPTY()
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	if !IsTerminal(tty) {
		t.Errorf("pty %s not taken for a terminal", path)
	}
}
