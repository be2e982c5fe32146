package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"printgate/agent/config"
	"printgate/drivers"
	"printgate/installer"
)

// installEnv is what installCmd uses besides its arguments: the machine's
// printers and networks, the terminal, and the service steps. Tests replace
// the discovery with fixed lists and a scan of 127.0.0.1, and leave the
// service steps out.
type installEnv struct {
	goos string
	// stdin answers the offers; interactive says it is a terminal.
	stdin       io.Reader
	interactive bool
	serial, usb func() ([]drivers.Found, error)
	// networks lists the CIDRs to scan for network printers.
	networks func() ([]string, error)
	scan     func(ctx context.Context, cidr string, port int, opts drivers.ScanOptions) ([]drivers.Found, error)
	// scanPort is the printing port to scan (9100).
	scanPort int
	// scanTimeout bounds each connect of the scan; scanBudget the whole.
	scanTimeout, scanBudget time.Duration
	// service registers the service for the config; nil leaves it out
	// (tests, --config-only).
	service func(configPath string, cfg *config.Config, stdout io.Writer) error
}

func defaultInstallEnv() installEnv {
	return installEnv{
		goos:        runtime.GOOS,
		stdin:       os.Stdin,
		interactive: isTerminal(os.Stdin), // render.go: a console, not /dev/null
		serial:      drivers.DiscoverSerial,
		usb:         drivers.DiscoverUSB,
		networks: func() ([]string, error) {
			p, err := installer.InterfacePrefixes()
			if err != nil {
				return nil, err
			}
			return installer.LocalNetworks(p), nil
		},
		scan:        drivers.ScanTCP,
		scanPort:    drivers.DefaultTCPPort,
		scanTimeout: 300 * time.Millisecond,
		scanBudget:  30 * time.Second,
		service:     installService,
	}
}

func runInstall(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return installCmd(ctx, defaultInstallEnv(), args, stdout, stderr)
}

const installUsage = `usage: printgate install [--config FILE] [--yes] [--no-discover] [--config-only]

Installs printgate as a service that starts with the computer and restarts
when it fails (Linux: a sandboxed systemd unit running as the printgate user;
Windows: an automatic service with recovery actions). When no config exists
at FILE, it first looks for printers (USB, serial ports and port 9100 on this
PC's own network), offers each one, and writes a commented config with a new
API token. An existing config is never replaced; one without printers (the
package's default) gets the printers chosen added at its end.`

func installCmd(ctx context.Context, env installEnv, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("install", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", config.DefaultConfigPath(), "the config `file` the service runs with")
	yes := fs.Bool("yes", false, "add every printer found without asking (serial ports only with a USB identity)")
	noDiscover := fs.Bool("no-discover", false, "do not look for printers; the config gets a commented example instead")
	configOnly := fs.Bool("config-only", false, "write the config and stop: do not register the service")
	fs.Usage = func() {
		fmt.Fprintln(stderr, installUsage)
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	path, err := filepath.Abs(*configPath)
	if err != nil {
		fmt.Fprintf(stderr, "printgate install: %v\n", err)
		return 1
	}
	register := env.service
	if *configOnly {
		register = nil
	}
	if register != nil {
		exe, err := installer.Executable()
		if err == nil {
			err = installer.CheckServicePaths(exe, path)
		}
		if err == nil {
			err = installer.PrepareHost(stdout)
		}
		if err != nil {
			fmt.Fprintf(stderr, "printgate install: %v\n", err)
			return 1
		}
	}

	if err := writeConfig(ctx, env, path, *yes, *noDiscover, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "printgate install: %v\n", err)
		return 1
	}
	cfg, cfgErr := config.Load(path)
	if register != nil {
		if err := register(path, cfg, stdout); err != nil {
			fmt.Fprintf(stderr, "printgate install: %v%s\n", err, installer.AdminHint())
			return 1
		}
	}
	if cfgErr != nil {
		fmt.Fprintf(stdout, "\nThe agent will not start until its config is fixed:\n%v\n", cfgErr)
	} else if len(cfg.Printers) == 0 {
		fmt.Fprintf(stdout, "\nNo printer is configured yet: the agent starts and serves its page, but prints nothing until one is added (the page's Printers page, or a [[printers]] table in %s, then printgate reload).\n", path)
	}
	// Without a service manager (a container) the agent runs by hand.
	writeNextSteps(stdout, env.goos, path, cfg, register != nil && installer.NoServiceManager() == "")
	return 0
}

// installService is the service part of install on a real machine.
func installService(configPath string, cfg *config.Config, stdout io.Writer) error {
	dirs := installer.ServiceDirs{Config: configPath}
	if cfg != nil {
		dirs.DataDir, dirs.TokenFile = cfg.DataDir, cfg.APITokenFile
	}
	if err := installer.PrepareDirs(dirs); err != nil {
		return err
	}
	exe, err := installer.Executable()
	if err != nil {
		return err
	}
	s, err := installer.NewService(exe, configPath)
	if err != nil {
		return err
	}
	return installer.RegisterService(s, stdout)
}

// writeConfig makes sure a config is at path: a new commented one with the
// printers chosen, or the existing one, completed with printers when it
// has none. It never replaces an existing config.
func writeConfig(ctx context.Context, env installEnv, path string, yes, noDiscover bool, stdout, stderr io.Writer) error {
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
		DataDir:  installer.DataDirFor(env.goos, os.Getenv("ProgramData"), path),
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
func discoverPrinters(ctx context.Context, env installEnv, stderr io.Writer) []drivers.Found {
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
	}{{"USB printers", env.usb}, {"serial ports", env.serial}} {
		list, err := src.fn()
		if err != nil {
			fmt.Fprintf(stderr, "warning: listing %s: %v\n", src.name, err)
		}
		add(list)
	}
	nets, err := env.networks()
	if err != nil {
		fmt.Fprintf(stderr, "warning: %v\n", err)
	}
	if len(nets) == 0 {
		fmt.Fprintln(stderr, "no local network to scan for network printers")
	}
	ctx, cancel := context.WithTimeout(ctx, env.scanBudget)
	defer cancel()
	for _, cidr := range nets {
		p := &progress{w: stderr, cidr: fmt.Sprintf("%s port %d", cidr, env.scanPort)}
		list, err := env.scan(ctx, cidr, env.scanPort, drivers.ScanOptions{Timeout: env.scanTimeout, Probe: true, Progress: p.report})
		p.finish()
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
func choosePrinters(env installEnv, found []drivers.Found, yes bool, stdout io.Writer) []installer.Printer {
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
	case env.interactive:
		in := bufio.NewReader(env.stdin)
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

// writeNextSteps tells the technician how to get from here to the first
// ticket: start, pair, the page and its PIN.
func writeNextSteps(w io.Writer, goos, path string, cfg *config.Config, service bool) {
	url := "http://127.0.0.1:8631/"
	if cfg != nil {
		url = agentURL(cfg) + "/"
	}
	sudo, asService := "", ""
	if goos == "linux" {
		sudo = "sudo "
		asService = "sudo -u printgate "
	}
	cfgArg := ""
	if path != config.DefaultConfigPath() {
		cfgArg = " --config " + path
	}
	fmt.Fprintln(w, "\nNext steps:")
	n := 1
	step := func(format string, args ...any) {
		fmt.Fprintf(w, "  %d. "+format+"\n", append([]any{n}, args...)...)
		n++
	}
	if cfg == nil || len(cfg.Printers) == 0 {
		step("add a printer to %s (see `printgate printers --scan 192.168.1.0/24`)", path)
	}
	if service {
		step("start the service: %sprintgate start%s", sudo, cfgArg)
	} else {
		step("run the agent: printgate run --config %s", path)
	}
	step("pair with the cloud: set [cloud] in %s, then %sprintgate pair%s", path, asService, cfgArg)
	step("open the manager page on this PC: %s", url)
	step("set the page's PIN: %sprintgate pin set%s, or from this PC's browser on the page", sudo, cfgArg)
	if service {
		step("check everything: %sprintgate status%s", sudo, cfgArg)
	}
}
