// Package setup is the config step of printgate install: it finds the
// printers of this PC (USB, serial ports, port 9100 on its own networks),
// offers each one (on a terminal it asks; with --yes it takes the likely
// ones), and writes a commented config with a new API token, or completes
// an existing one that has no printer. It never replaces a config.
package setup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"printgate/agent/config"
	"printgate/cmd/printgate/internal/probe"
	"printgate/drivers"
	"printgate/installer"
)

// Env is what the config step uses besides its arguments: the machine's
// printers and networks and the terminal. Tests replace the discovery with
// fixed lists and a scan of 127.0.0.1.
type Env struct {
	GOOS string
	// Stdin answers the offers; Interactive says it is a terminal.
	Stdin       io.Reader
	Interactive bool
	Serial, USB func() ([]drivers.Found, error)
	// Networks lists the CIDRs to scan for network printers.
	Networks func() ([]string, error)
	Scan     func(ctx context.Context, cidr string, port int, opts drivers.ScanOptions) ([]drivers.Found, error)
	// ScanPort is the printing port to scan (9100).
	ScanPort int
	// ScanTimeout bounds each connect of the scan; ScanBudget the whole.
	ScanTimeout, ScanBudget time.Duration
}

// WriteConfig makes sure a config is at path: a new commented one with the
// printers chosen, or the existing one, completed with printers when it
// has none. It never replaces an existing config.
func WriteConfig(ctx context.Context, env Env, path string, yes, noDiscover bool, stdout, stderr io.Writer) error {
	data, err := os.ReadFile(path)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read the existing config: %w", err)
	}
	if exists {
		if err := ensureTokenFile(path, data, stdout); err != nil {
			return err
		}
		has, err := installer.HasPrinters(data)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if has || noDiscover {
			fmt.Fprintf(stdout, "keeping the existing config %s\n", path)
			return nil
		}
		fmt.Fprintf(stdout, "the config %s has no printer yet\n", path)
	}
	var chosen []installer.Printer
	if !noDiscover {
		found := discoverPrinters(ctx, env, stderr)
		chosen = choosePrinters(env, found, yes, stdout)
	}
	if exists {
		if len(chosen) == 0 {
			return nil
		}
		if err := installer.AppendPrinters(path, chosen); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "added %d printer(s) to %s\n", len(chosen), path)
		return nil
	}
	text := installer.ConfigText(installer.ConfigOptions{
		DataDir:  installer.DataDirFor(env.GOOS, os.Getenv("ProgramData"), path),
		Token:    config.NewToken(),
		Printers: chosen,
	})
	if err := installer.WriteNewConfig(path, text); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s with %d printer(s) and a new API token\n", path, len(chosen))
	return nil
}

// ensureTokenFile writes a new token where an existing config's
// api_token_file points when that file is missing: the .deb's default
// config names api-token.txt, made per machine.
func ensureTokenFile(path string, data []byte, stdout io.Writer) error {
	var raw struct {
		APITokenFile string `toml:"api_token_file"`
	}
	if _, err := toml.Decode(string(data), &raw); err != nil || raw.APITokenFile == "" {
		return nil // the config's own check reports a bad file
	}
	tf := raw.APITokenFile
	if !filepath.IsAbs(tf) {
		tf = filepath.Join(filepath.Dir(path), tf)
	}
	if _, err := os.Stat(tf); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := installer.WriteNewConfig(tf, []byte(config.NewToken()+"\n")); err != nil {
		return fmt.Errorf("write the API token: %w", err)
	}
	fmt.Fprintf(stdout, "wrote a new API token to %s\n", tf)
	return nil
}

// discoverPrinters lists USB printers, serial ports and hosts with the
// printing port open on this PC's networks, with progress on stderr. A
// source that fails is reported and skipped.
func discoverPrinters(ctx context.Context, env Env, stderr io.Writer) []drivers.Found {
	var found []drivers.Found
	seen := map[string]bool{}
	add := func(list []drivers.Found) {
		for _, f := range list {
			if !seen[f.URL] {
				seen[f.URL] = true
				found = append(found, f)
			}
		}
	}
	fmt.Fprintln(stderr, "looking for printers on USB and serial ports...")
	for _, src := range []struct {
		name string
		fn   func() ([]drivers.Found, error)
	}{{"USB printers", env.USB}, {"serial ports", env.Serial}} {
		list, err := src.fn()
		if err != nil {
			fmt.Fprintf(stderr, "warning: listing %s: %v\n", src.name, err)
		}
		add(list)
	}
	nets, err := env.Networks()
	if err != nil {
		fmt.Fprintf(stderr, "warning: %v\n", err)
	}
	if len(nets) == 0 {
		fmt.Fprintf(stderr, "no network printers looked for: this PC has no address on a private network (%s), and printgate scans no other; add a network printer by its address on the page's Printers tab (Add a printer by address)\n", drivers.ScanRanges)
	} else {
		fmt.Fprintf(stderr, "looking for network printers on %s: the /24 around this PC's private addresses (printgate scans only %s)\n", strings.Join(nets, ", "), drivers.ScanRanges)
	}
	ctx, cancel := context.WithTimeout(ctx, env.ScanBudget)
	defer cancel()
	for _, cidr := range nets {
		p := &probe.Progress{W: stderr, CIDR: fmt.Sprintf("%s port %d", cidr, env.ScanPort)}
		list, err := env.Scan(ctx, cidr, env.ScanPort, drivers.ScanOptions{Timeout: env.ScanTimeout, Probe: true, Progress: p.Report})
		p.Finish()
		if err != nil {
			fmt.Fprintf(stderr, "warning: %v\n", err)
		}
		add(list)
		if ctx.Err() != nil {
			break
		}
	}
	return found
}

// printerNameRE is the config's rule for printer names.
var printerNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// choosePrinters offers each printer found: on a terminal it asks (the
// default answer is yes for what --yes would take) and lets the technician
// name it; with yes it takes what TakenByDefault takes; otherwise none.
func choosePrinters(env Env, found []drivers.Found, yes bool, stdout io.Writer) []installer.Printer {
	if len(found) == 0 {
		fmt.Fprintln(stdout, "no printer found. Connect one and run `printgate printers` to see it, or add a [[printers]] entry by hand.")
		return nil
	}
	fmt.Fprintf(stdout, "found %d printer(s) or port(s):\n", len(found))
	taken := map[string]bool{}
	var out []installer.Printer
	take := func(f drivers.Found, name string) {
		taken[name] = true
		out = append(out, installer.Printer{Name: name, URL: f.URL, Comment: "Found at install: " + installer.Describe(f)})
	}
	switch {
	case yes:
		for _, f := range found {
			if installer.TakenByDefault(f) {
				name := installer.NameFor(f, taken)
				take(f, name)
				fmt.Fprintf(stdout, "  + %s: %s (%s)\n", name, installer.Describe(f), f.URL)
			} else {
				fmt.Fprintf(stdout, "  - skipped %s (%s): add it by hand if a printer is on it\n", installer.Describe(f), f.URL)
			}
		}
	case env.Interactive:
		in := bufio.NewReader(env.Stdin)
		for _, f := range found {
			def := installer.TakenByDefault(f)
			hint := "[Y/n]"
			if !def {
				hint = "[y/N]"
			}
			fmt.Fprintf(stdout, "Add %s (%s)? %s ", installer.Describe(f), f.URL, hint)
			answer, ok := readLine(in)
			if !ok {
				fmt.Fprintln(stdout)
				break
			}
			if !yesAnswer(answer, def) {
				continue
			}
			name := installer.NameFor(f, taken)
			for tries := 0; tries < 3; tries++ {
				fmt.Fprintf(stdout, "  name for tickets to use [%s]: ", name)
				n, _ := readLine(in)
				n = strings.TrimSpace(n)
				if n == "" {
					break
				}
				if printerNameRE.MatchString(n) && !taken[n] {
					name = n
					break
				}
				fmt.Fprintln(stdout, "  use 1-64 letters, digits, dots, dashes or underscores, not a name already used")
			}
			take(f, name)
		}
	default:
		for _, f := range found {
			fmt.Fprintf(stdout, "  %s (%s)\n", installer.Describe(f), f.URL)
		}
		fmt.Fprintln(stdout, "not a terminal, so none was added: run printgate install --yes to add them all, or add")
		fmt.Fprintln(stdout, "[[printers]] entries with the URLs above to the config by hand.")
	}
	return out
}

func readLine(r *bufio.Reader) (string, bool) {
	s, err := r.ReadString('\n')
	if err != nil && s == "" {
		return "", false
	}
	return strings.TrimSpace(s), true
}

func yesAnswer(s string, def bool) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "":
		return def
	case "y", "yes":
		return true
	}
	return false
}
