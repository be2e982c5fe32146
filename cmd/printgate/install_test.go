package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"printgate/agent/config"
	"printgate/cmd/printgate/internal/setup"
	"printgate/drivers"
	"printgate/drivers/printertest"
	"printgate/installer"
)

// testInstallEnv finds one USB printer, two serial ports (one bare, one
// behind a USB-serial chip) and, by a real scan of 127.0.0.1 only, the
// emulated network printer listening at emuAddr.
func testInstallEnv(t *testing.T, emuAddr string) installEnv {
	t.Helper()
	_, portStr, err := net.SplitHostPort(emuAddr)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portStr)
	return installEnv{Env: setup.Env{
		GOOS: runtime.GOOS,
		USB: func() ([]drivers.Found, error) {
			return []drivers.Found{{Kind: drivers.SchemeUSB, URL: "usb://04b8:0202", Name: "/dev/usb/lp0", VendorID: 0x04b8, ProductID: 0x0202, Model: "EPSON TM-T20II"}}, nil
		},
		Serial: func() ([]drivers.Found, error) {
			return []drivers.Found{
				{Kind: drivers.SchemeSerial, URL: "serial:///dev/ttyS0", Name: "/dev/ttyS0"},
				{Kind: drivers.SchemeSerial, URL: "serial:///dev/ttyUSB0", Name: "/dev/ttyUSB0", VendorID: 0x067b, ProductID: 0x2303},
			}, nil
		},
		Networks:    func() ([]string, error) { return []string{"127.0.0.1/32"}, nil },
		Scan:        drivers.ScanTCP,
		ScanPort:    port,
		ScanTimeout: 2 * time.Second,
		ScanBudget:  10 * time.Second,
	}}
}

func startLANEmulator(t *testing.T) string {
	t.Helper()
	p := printertest.New(printertest.Options{Name: "lan"})
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p.Addr()
}

func runInstallTest(t *testing.T, env installEnv, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = installCmd(context.Background(), env, args, &out, &errb)
	return code, out.String(), errb.String()
}

func printerURLs(cfg *config.Config) map[string]string {
	m := map[string]string{}
	for _, p := range cfg.Printers {
		m[p.Name] = p.URL
	}
	return m
}

func TestInstallYesWritesConfigWithFoundPrinters(t *testing.T) {
	emu := startLANEmulator(t)
	path := filepath.Join(t.TempDir(), "printgate.toml")
	code, out, errOut := runInstallTest(t, testInstallEnv(t, emu), "--config", path, "--yes")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("generated config: %v", err)
	}
	want := map[string]string{"usb1": "usb://04b8:0202", "serial1": "serial:///dev/ttyUSB0", "net1": "tcp://" + emu}
	got := printerURLs(cfg)
	if len(got) != len(want) {
		t.Errorf("printers %v, want %v", got, want)
	}
	for n, u := range want {
		if got[n] != u {
			t.Errorf("printer %s = %q, want %q (all: %v)", n, got[n], u, got)
		}
	}
	if len(cfg.APIToken.Reveal()) < 32 {
		t.Errorf("token %d characters", len(cfg.APIToken.Reveal()))
	}
	if cfg.DataDir != filepath.Join(filepath.Dir(path), "data") {
		t.Errorf("data_dir %s: a config outside the service's place must not share its spool", cfg.DataDir)
	}
	if runtime.GOOS != "windows" {
		if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
			t.Errorf("config mode %v, want 0600", st.Mode().Perm())
		}
	}
	text, _ := os.ReadFile(path)
	if !strings.Contains(string(text), "# Found at install: network printer port at "+emu+", answers ESC/POS status queries\n[[printers]]") {
		t.Errorf("no comment above the network printer:\n%s", text)
	}
	if !strings.Contains(errOut, "scanning 127.0.0.1/32 port") {
		t.Errorf("no scan progress on stderr:\n%s", errOut)
	}
	if !strings.Contains(out, "skipped serial port /dev/ttyS0") {
		t.Errorf("the bare serial port should be named as skipped:\n%s", out)
	}
	for _, step := range []string{"printgate pair --config " + path, "http://127.0.0.1:8631/", "printgate pin set", "printgate run --config " + path} {
		if !strings.Contains(out, step) {
			t.Errorf("next steps lack %q:\n%s", step, out)
		}
	}
}

func TestInstallNeverOverwritesConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "printgate.toml")
	orig := installer.ConfigText(installer.ConfigOptions{DataDir: "data", Token: config.NewToken(),
		Printers: []installer.Printer{{Name: "kitchen", URL: "tcp://127.0.0.1:1"}}})
	orig = append(orig, []byte("# the technician's own note\n")...)
	if err := os.WriteFile(path, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	env := testInstallEnv(t, "127.0.0.1:1")
	env.Networks = func() ([]string, error) { t.Error("a config with printers must not start a scan"); return nil, nil }
	code, out, errOut := runInstallTest(t, env, "--config", path, "--yes")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, orig) {
		t.Errorf("existing config changed:\n%s", got)
	}
	if !strings.Contains(out, "keeping the existing config") {
		t.Errorf("output does not say the config was kept:\n%s", out)
	}
}

func TestInstallNotTerminalTakesNone(t *testing.T) {
	emu := startLANEmulator(t)
	path := filepath.Join(t.TempDir(), "printgate.toml")
	env := testInstallEnv(t, emu)
	env.Stdin = strings.NewReader("y\ny\ny\ny\n") // ignored: not a terminal
	code, out, errOut := runInstallTest(t, env, "--config", path)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if has, _ := installer.HasPrinters(data); has {
		t.Errorf("printers added without a terminal or --yes:\n%s", data)
	}
	for _, s := range []string{"not a terminal", "--yes", "tcp://" + emu, "No printer is configured yet", "prints nothing until one is added"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

func TestInstallInteractive(t *testing.T) {
	emu := startLANEmulator(t)
	path := filepath.Join(t.TempDir(), "printgate.toml")
	env := testInstallEnv(t, emu)
	env.Interactive = true
	// usb: no; ttyS0: default (no); ttyUSB0: yes, a bad name then "bar";
	// network: default (yes), default name.
	env.Stdin = strings.NewReader("n\n\ny\nbad name\nbar\n\n\n")
	code, out, errOut := runInstallTest(t, env, "--config", path)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := printerURLs(cfg)
	want := map[string]string{"bar": "serial:///dev/ttyUSB0", "net1": "tcp://" + emu}
	if len(got) != len(want) || got["bar"] != want["bar"] || got["net1"] != want["net1"] {
		t.Errorf("printers %v, want %v\n%s", got, want, out)
	}
	if !strings.Contains(out, "[y/N]") || !strings.Contains(out, "[Y/n]") || !strings.Contains(out, "use 1-64 letters") {
		t.Errorf("prompts missing:\n%s", out)
	}
}

// TestInstallCompletesPackagedConfig is the .deb case: the package's
// config has no printer and names a token file that does not exist yet.
func TestInstallCompletesPackagedConfig(t *testing.T) {
	emu := startLANEmulator(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "printgate.toml")
	pkg := installer.ConfigText(installer.ConfigOptions{DataDir: filepath.Join(dir, "data"), TokenFile: "api-token.txt"})
	if err := os.WriteFile(path, pkg, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runInstallTest(t, testInstallEnv(t, emu), "--config", path, "--yes")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	after, _ := os.ReadFile(path)
	if !bytes.HasPrefix(after, pkg) {
		t.Errorf("the package's text was changed, not appended to:\n%s", after)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, after)
	}
	if len(cfg.Printers) != 3 || cfg.APITokenFile != filepath.Join(dir, "api-token.txt") {
		t.Errorf("printers %v, token file %q", printerURLs(cfg), cfg.APITokenFile)
	}
	if !strings.Contains(out, "wrote a new API token") || !strings.Contains(out, "added 3 printer(s)") {
		t.Errorf("output:\n%s", out)
	}
}

func TestInstallNoDiscover(t *testing.T) {
	path := filepath.Join(t.TempDir(), "printgate.toml")
	env := testInstallEnv(t, "127.0.0.1:1")
	fail := func() ([]drivers.Found, error) { t.Error("--no-discover looked for printers"); return nil, nil }
	env.USB, env.Serial = fail, fail
	env.Networks = func() ([]string, error) { t.Error("--no-discover scanned"); return nil, nil }
	code, out, errOut := runInstallTest(t, env, "--config", path, "--no-discover")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "# [[printers]]") || !strings.Contains(out, "add a printer: on the manager page's Printers tab") || !strings.Contains(out, "or in "+path) {
		t.Errorf("expected a commented example and a step to add a printer:\n%s\n%s", data, out)
	}
}

func TestInstallUsage(t *testing.T) {
	code, _, errOut := runInstallTest(t, installEnv{}, "--bogus")
	if code != 2 || !strings.Contains(errOut, "usage: printgate install [--config FILE] [--yes] [--no-discover]") {
		t.Errorf("exit %d\n%s", code, errOut)
	}
	code, _, _ = runInstallTest(t, installEnv{}, "extra")
	if code != 2 {
		t.Errorf("a positional argument: exit %d, want 2", code)
	}
}

// TestInstallNextStepsForTheShell ensures the next steps after install work
// pasted where install ran: in a root shell, where a fresh Debian may have
// no sudo, without sudo (runuser for the service's account); after `sudo
// printgate install`, with sudo. They said sudo everywhere.
func TestInstallNextStepsForTheShell(t *testing.T) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("a root shell on Linux only")
	}
	emu := startLANEmulator(t)
	for _, tc := range []struct {
		sudoUser string
		want     []string
		wantNot  string
	}{
		{"", []string{"printgate pin set", "runuser -u printgate -- printgate pair"}, "sudo"},
		{"someone", []string{"sudo printgate pin set", "sudo -u printgate printgate pair"}, "runuser"},
	} {
		t.Setenv("SUDO_USER", tc.sudoUser)
		path := filepath.Join(t.TempDir(), "printgate.toml")
		code, out, errOut := runInstallTest(t, testInstallEnv(t, emu), "--config", path, "--yes")
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		steps := out[strings.Index(out, "Next steps:"):]
		for _, w := range tc.want {
			if !strings.Contains(steps, w) {
				t.Errorf("SUDO_USER=%q: next steps lack %q:\n%s", tc.sudoUser, w, steps)
			}
		}
		if strings.Contains(steps, tc.wantNot) {
			t.Errorf("SUDO_USER=%q: next steps say %s:\n%s", tc.sudoUser, tc.wantNot, steps)
		}
	}
}

// TestInstallSaysWhichNetworks ensures install names the networks it scans
// and the rule it shares with the page's scan (private ranges only), and,
// on a PC with no private address, says it scanned nothing and where to add
// a printer by its address (it said "no local network to scan", and sent
// the person to a page that could add only printers it found).
func TestInstallSaysWhichNetworks(t *testing.T) {
	emu := startLANEmulator(t)
	env := testInstallEnv(t, emu)
	_, _, errOut := runInstallTest(t, env, "--config", filepath.Join(t.TempDir(), "printgate.toml"), "--yes")
	if !strings.Contains(errOut, "looking for network printers on 127.0.0.1/32") || !strings.Contains(errOut, "printgate scans only "+drivers.ScanRanges) {
		t.Errorf("install does not name the networks it scans and the rule:\n%s", errOut)
	}
	env.Networks = func() ([]string, error) { return nil, nil }
	_, _, errOut = runInstallTest(t, env, "--config", filepath.Join(t.TempDir(), "printgate.toml"), "--yes")
	if !strings.Contains(errOut, "no address on a private network ("+drivers.ScanRanges+")") || !strings.Contains(errOut, "Add a printer by address") {
		t.Errorf("install on a PC with no private network:\n%s", errOut)
	}
}
