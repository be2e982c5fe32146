package installer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"printgate/internal/tomlq"

	"github.com/BurntSushi/toml"
)

// Printer is a [[printers]] entry the installer writes: a name, a URL and
// a comment saying where the printer was found.
type Printer struct {
	Name    string
	URL     string
	Comment string
}

// ConfigOptions are the values of a new config.
type ConfigOptions struct {
	// DataDir and Listen are written as data_dir and listen.
	DataDir string
	Listen  string
	// Token is written inline as api_token; TokenFile, when Token is
	// empty, as api_token_file (the .deb's default config, whose token
	// postinst writes per machine).
	Token, TokenFile string
	// Printers are written as [[printers]] blocks; with none the file has
	// a commented example instead, and the agent refuses it until one is
	// added.
	Printers []Printer
	// Packaged marks the .deb's default config: its header says the
	// package installed it and how to add the printers.
	Packaged bool
}

// DefaultListen is the agent's default address: only this PC reaches the
// API and the page until the config opens it.
const DefaultListen = "127.0.0.1:8631"

// ConfigText returns a new commented config: each section has a comment
// above it saying what it is for and how to change it, so a technician who
// opens it later needs no manual.
func ConfigText(o ConfigOptions) []byte {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	var b strings.Builder
	b.WriteString("# printgate.toml: the configuration of this store's printgate agent.\n")
	if o.Packaged {
		b.WriteString("# Installed by the printgate package. `sudo printgate install` adds the\n" +
			"# printers it finds to the end of this file and enables the service.\n")
	} else {
		b.WriteString("# Written by `printgate install`.\n")
	}
	b.WriteString(`# Every key is explained in the commented sample (testdata/config/printgate.toml
# in the source) and in docs/PROTOCOL.md §2. printgate checks the whole file at
# start and names the line of any mistake.

# Where the spool (accepted tickets), the log and the pairing state live.
data_dir = ` + tomlString(o.DataDir) + `

# Address of the local web server: the POS intake API, the manager page,
# /metrics and /healthz. 127.0.0.1 means only this PC. For POS terminals
# elsewhere on the shop's network use "0.0.0.0:8631" (and consider
# tls = "self-signed").
listen = ` + tomlString(o.Listen) + `

# A POS that calls this PC by a DNS name of its own (not its address or its
# computer name) is refused with 421 until the name is listed here:
# allowed_hosts = ["pos.local"]

# The token every POS must send (Authorization: Bearer ...). Make a new one
# with ` + "`printgate token`" + `.
`)
	if o.Token != "" {
		b.WriteString("# Give the POS this value.\napi_token = " + tomlString(o.Token) + "\n")
	} else {
		b.WriteString("# Give the POS the token in this file (next to this config).\napi_token_file = " + tomlString(o.TokenFile) + "\n")
	}
	b.WriteString(`
# The link to the cloud. Uncomment it with the addresses your cloud account
# gives you, then pair this PC with ` + "`printgate pair`" + `. Without it the store
# prints on its own through the local API.
# [cloud]
# url      = "wss://print.example.com/agent/v1"
# auth_url = "https://print.example.com/oauth"

# One [[printers]] table per printer. name is what tickets are sent to; url
# says how to reach it: tcp://192.168.1.50:9100, serial:///dev/ttyUSB0 (or
# serial://COM3), usb:///dev/usb/lp0 or usb://04b8:0202, winspool://QUEUE.
# profile is the model family: epson-80 (the default), epson-58,
# xprinter-80, xprinter-58 or oneway-80. backup names the printer that takes
# over when this one is down. ` + "`printgate printers --scan 192.168.1.0/24`" + ` lists
# what this PC can see. raw_listen = ":9101" gives a printer a raw port: a
# POS that prints straight to a printer's IP is pointed at this PC and that
# port instead, and its tickets go through the spool.
`)
	if len(o.Printers) == 0 {
		b.WriteString(`# No printer yet. Add one like this, then start the service
# (` + "`printgate start`" + `):
# [[printers]]
# name = "kitchen"
# url  = "tcp://192.168.1.50:9100"
`)
	}
	for _, p := range o.Printers {
		b.WriteString("\n" + PrinterBlock(p))
	}
	return []byte(b.String())
}

// PackagedConfig is the .deb's conffile /etc/printgate/printgate.toml:
// no printer yet and the token in api-token.txt, which postinst writes per
// machine (a token in the package would be the same in every store).
func PackagedConfig() []byte {
	return ConfigText(ConfigOptions{DataDir: LinuxDataDir, TokenFile: "api-token.txt", Packaged: true})
}

// PrinterBlock is one [[printers]] table with its comment.
func PrinterBlock(p Printer) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(p.Comment), "\n") {
		if line != "" {
			b.WriteString("# " + line + "\n")
		}
	}
	b.WriteString("[[printers]]\n")
	b.WriteString("name = " + tomlString(p.Name) + "\n")
	b.WriteString("url  = " + tomlString(p.URL) + "\n")
	return b.String()
}

// tomlString writes s as a TOML string: a literal string where it can be
// (Windows paths read better without doubled backslashes), else a basic
// string with escapes.
func tomlString(s string) string {
	if !strings.ContainsAny(s, "'\n\r") && !hasControl(s) {
		return "'" + s + "'"
	}
	return tomlq.Quote(s)
}

func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return true
		}
	}
	return false
}

// ErrConfigExists is returned by WriteNewConfig when a file is already at
// the path: an installer never replaces a config someone may have edited.
var ErrConfigExists = errors.New("a config already exists there")

// WriteNewConfig writes data to path, mode 0600, only if nothing is there.
// The file appears whole or not at all: the data goes to a temporary file
// in the same folder, is synced, and is linked to path, which fails rather
// than replace a file that appeared meanwhile.
func WriteNewConfig(path string, data []byte) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("write %s: %w", path, ErrConfigExists)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("create the config folder: %w", err)
	}
	tmp, err := writeTemp(path, data, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("write %s: %w", path, ErrConfigExists)
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// HasPrinters reports whether config text has a [[printers]] entry. It
// reads the TOML only, not the agent's rules, so it answers for the
// packaged default config, which the agent refuses for lack of a printer.
func HasPrinters(data []byte) (bool, error) {
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return false, fmt.Errorf("read the config: %w", err)
	}
	ps, ok := raw["printers"].([]map[string]any)
	return ok && len(ps) > 0, nil
}

// AppendPrinters adds printer blocks at the end of the config at path,
// keeping every byte that was there (comments included), its mode and,
// on Unix, its owner. The new file replaces the old one by rename, so a
// crash leaves either the old or the new config, never half of one.
func AppendPrinters(path string, ps []Printer) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read the config: %w", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("read the config: %w", err)
	}
	var b strings.Builder
	b.Write(old)
	if len(old) > 0 && !strings.HasSuffix(string(old), "\n") {
		b.WriteByte('\n')
	}
	for _, p := range ps {
		b.WriteString("\n" + PrinterBlock(p))
	}
	tmp, err := writeTemp(path, []byte(b.String()), st.Mode().Perm())
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := copyOwner(st, tmp); err != nil {
		return fmt.Errorf("keep the config's owner: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// writeTemp writes data to a new file beside path, synced, with mode perm,
// and returns its name.
func writeTemp(path string, data []byte, perm fs.FileMode) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("write the config: %w", err)
	}
	name := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return "", fmt.Errorf("write the config: %w", err)
	}
	return name, nil
}
