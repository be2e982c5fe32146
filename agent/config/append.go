package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"printgate/internal/fileowner"
	"printgate/internal/tomlq"
)

// ErrFileChanged is returned by AppendPrinter when the config file changed
// between the caller's read and the write: nothing was written.
var ErrFileChanged = errors.New("the config file changed meanwhile; nothing was written")

var printerName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// AppendPrinter adds a [[printers]] table with name and url at the end of
// the config file at path, keeping every byte before it (comments
// included). The result must parse (a taken name, a printer already listed
// or a bad url are refused with the config's own messages). If want is not
// nil, the file must still hold exactly want, the text the caller showed
// the manager, or ErrFileChanged is returned. The write is atomic: a
// temporary file next to it, fsync'd, renamed over it, the directory
// fsync'd, and the file's mode kept.
func AppendPrinter(path, name, url string, want []byte) (*Config, error) {
	if !printerName.MatchString(name) {
		return nil, fmt.Errorf("printer name %q: use 1–64 letters, digits, '.', '_' or '-'", name)
	}
	old, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if want != nil && !bytes.Equal(old, want) {
		return nil, fmt.Errorf("append printer %s to %s: %w", name, path, ErrFileChanged)
	}
	var b bytes.Buffer
	b.Write(old)
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		b.WriteByte('\n')
	}
	b.WriteString("\n" + PrinterBlock(name, url))
	cfg, err := Parse(path, b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("adding printer %s would make the config invalid: %w", name, err)
	}
	mode := os.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("append printer: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a successful rename, nothing left to remove
	if _, err := tmp.Write(b.Bytes()); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("append printer: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("append printer: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("append printer: fsync: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("append printer: %w", err)
	}
	// The config stays its owner's (the service's) when root adds to it.
	if err := fileowner.Like(tmp.Name(), path); err != nil {
		return nil, fmt.Errorf("append printer: %w", err)
	}
	// Read again just before the rename: an edit made while this one was
	// being prepared is not overwritten.
	if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, old) {
		return nil, fmt.Errorf("append printer %s to %s: %w", name, path, ErrFileChanged)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nil, fmt.Errorf("append printer: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the rename is durable once the directory is; not possible on Windows
		d.Close()
	}
	return cfg, nil
}

// PrinterBlock is the text AppendPrinter adds after the file's last line
// (and a blank line), so the page can show a manager exactly what the
// file will gain.
func PrinterBlock(name, url string) string {
	return fmt.Sprintf("# added from the manager page\n[[printers]]\nname = %s\nurl = %s\n", tomlq.Quote(name), tomlq.Quote(url))
}
