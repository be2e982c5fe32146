package installer

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"printgate/agent/config"
	"printgate/drivers"
)

func TestAccountCommands(t *testing.T) {
	none := AccountLookup{UserExists: func(string) bool { return false }, GroupExists: func(string) bool { return false }}
	got := AccountCommands(none)
	want := [][]string{
		{"groupadd", "--system", "lp"},
		{"groupadd", "--system", "dialout"},
		{"useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/var/lib/printgate",
			"--shell", "/usr/sbin/nologin", "--comment", DisplayName, "--groups", "lp,dialout", "printgate"},
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("fresh system:\n got %q\nwant %q", got, want)
	}

	all := AccountLookup{UserExists: func(string) bool { return true }, GroupExists: func(string) bool { return true }}
	got = AccountCommands(all)
	want = [][]string{{"usermod", "--append", "--groups", "lp,dialout", "printgate"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("existing account:\n got %q\nwant %q", got, want)
	}
}

func TestWindowsRecovery(t *testing.T) {
	steps := WindowsRecovery()
	want := []time.Duration{5 * time.Second, 30 * time.Second, 60 * time.Second}
	if len(steps) != len(want) {
		t.Fatalf("got %d steps, want %d", len(steps), len(want))
	}
	for i, s := range steps {
		if s.Delay != want[i] {
			t.Errorf("step %d delay %v, want %v", i, s.Delay, want[i])
		}
		if i > 0 && s.Delay <= steps[i-1].Delay {
			t.Errorf("step %d delay %v does not grow from %v", i, s.Delay, steps[i-1].Delay)
		}
	}
	if WindowsRecoveryReset != 24*time.Hour {
		t.Errorf("reset period %v, want a day", WindowsRecoveryReset)
	}
}

func TestServicePaths(t *testing.T) {
	w := ServicePaths("windows", `D:\PD`)
	if w.Config != `D:\PD\printgate\printgate.toml` || w.DataDir != `D:\PD\printgate` {
		t.Errorf("windows: %+v", w)
	}
	if w := ServicePaths("windows", ""); w.DataDir != `C:\ProgramData\printgate` {
		t.Errorf("windows without %%ProgramData%%: %+v", w)
	}
	l := ServicePaths("linux", "")
	if l.Config != "/etc/printgate/printgate.toml" || l.DataDir != "/var/lib/printgate" {
		t.Errorf("linux: %+v", l)
	}
	for _, c := range []struct{ goos, pd, cfg, want string }{
		{"linux", "", "/etc/printgate/printgate.toml", "/var/lib/printgate"},
		{"linux", "", "/srv/pg/printgate.toml", "/srv/pg/data"},
		{"windows", `C:\ProgramData`, `c:\programdata\PRINTGATE\printgate.toml`, `C:\ProgramData\printgate`},
		{"windows", `C:\ProgramData`, `E:\pg\printgate.toml`, `E:\pg\data`},
	} {
		if got := DataDirFor(c.goos, c.pd, c.cfg); got != c.want {
			t.Errorf("DataDirFor(%s, %s) = %s, want %s", c.goos, c.cfg, got, c.want)
		}
	}
}

func TestConfigTextParses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "printgate.toml")
	token := config.NewToken()
	ps := []Printer{
		{Name: "net1", URL: "tcp://127.0.0.1:9100", Comment: "network printer port at 127.0.0.1:9100"},
		{Name: "usb1", URL: "usb://04b8:0202", Comment: "USB printer EPSON TM-T20II"},
	}
	data := ConfigText(ConfigOptions{DataDir: filepath.Join(dir, "data"), Token: token, Printers: ps})
	cfg, err := config.Parse(path, data)
	if err != nil {
		t.Fatalf("generated config does not parse: %v\n%s", err, data)
	}
	if cfg.APIToken.Reveal() != token || cfg.Listen != DefaultListen || cfg.DataDir != filepath.Join(dir, "data") {
		t.Errorf("token/listen/data_dir not as written: %q %q %q", cfg.APIToken.Reveal(), cfg.Listen, cfg.DataDir)
	}
	if len(cfg.Printers) != 2 || cfg.Printers[0].Name != "net1" || cfg.Printers[0].URL != "tcp://127.0.0.1:9100" ||
		cfg.Printers[1].Name != "usb1" || cfg.Printers[1].URL != "usb://04b8:0202" {
		t.Errorf("printers %+v", cfg.Printers)
	}
	// A comment above every section and every printer.
	text := string(data)
	for _, anchor := range []string{"data_dir =", "listen =", "api_token =", "# [cloud]", "[[printers]]\nname = 'net1'", "[[printers]]\nname = 'usb1'"} {
		i := strings.Index(text, anchor)
		if i < 0 {
			t.Fatalf("no %q in\n%s", anchor, text)
		}
		before := strings.Split(strings.TrimRight(text[:i], "\n"), "\n")
		if last := before[len(before)-1]; !strings.HasPrefix(last, "#") {
			t.Errorf("%q has no comment above it (line before: %q)", anchor, last)
		}
	}
	if has, err := HasPrinters(data); !has || err != nil {
		t.Errorf("HasPrinters = %v, %v", has, err)
	}
}

func TestConfigTextWindowsPath(t *testing.T) {
	data := ConfigText(ConfigOptions{DataDir: `C:\ProgramData\printgate`, Token: config.NewToken(),
		Printers: []Printer{{Name: "serial1", URL: "serial://COM3"}}})
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "printgate.toml"), data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if runtime.GOOS == "windows" && cfg.DataDir != `C:\ProgramData\printgate` {
		t.Errorf("data_dir %q", cfg.DataDir)
	}
	if !strings.Contains(string(data), `data_dir = 'C:\ProgramData\printgate'`) {
		t.Errorf("Windows path not written as a literal string:\n%s", data)
	}
}

func TestTOMLString(t *testing.T) {
	for _, s := range []string{`plain`, `C:\x`, `it's`, "two\nlines", `a"b\c'`} {
		data := "k = " + tomlString(s) + "\n"
		var v struct{ K string }
		if _, err := toml.Decode(data, &v); err != nil || v.K != s {
			t.Errorf("%q written as %s reads back %q, %v", s, tomlString(s), v.K, err)
		}
	}
}

// TestDefaultConfigNoPrinters is the .deb's conffile: it reads as TOML,
// has no printer (so install adds the discovered ones) yet is valid, names the token
// file postinst writes, and becomes a valid config once a printer is
// appended.
func TestDefaultConfigNoPrinters(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "printgate.toml")
	data := PackagedConfig()
	if has, err := HasPrinters(data); has || err != nil {
		t.Fatalf("HasPrinters = %v, %v", has, err)
	}
	if err := os.WriteFile(path, data, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "api-token.txt"), []byte(config.NewToken()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Valid without printers: the agent starts and serves its page,
	// where the first printer is added.
	if _, err := config.Parse(path, data); err != nil {
		t.Errorf("the packaged config without printers: %v", err)
	}
	if err := AppendPrinters(path, []Printer{{Name: "net1", URL: "tcp://127.0.0.1:9100", Comment: "found at install"}}); err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(after), string(data)) {
		t.Errorf("append changed what was there")
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("config after append: %v\n%s", err, after)
	}
	if len(cfg.Printers) != 1 || cfg.Printers[0].Name != "net1" {
		t.Errorf("printers %+v", cfg.Printers)
	}
	if runtime.GOOS != "windows" {
		if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
			t.Errorf("mode after append %v, want the old 0640", st.Mode().Perm())
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".printgate.toml.tmp-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestWriteNewConfigNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "printgate.toml")
	if err := WriteNewConfig(path, []byte("first\n")); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
			t.Errorf("mode %v, want 0600: the file holds the API token", st.Mode().Perm())
		}
	}
	err := WriteNewConfig(path, []byte("second\n"))
	if !errors.Is(err, ErrConfigExists) {
		t.Errorf("second write: %v, want ErrConfigExists", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "first\n" {
		t.Errorf("config overwritten: %q", got)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "sub", ".printgate.toml.tmp-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestLocalNetworks(t *testing.T) {
	in := []netip.Prefix{
		netip.MustParsePrefix("127.0.0.1/8"),
		netip.MustParsePrefix("192.168.1.23/24"),
		netip.MustParsePrefix("192.168.1.99/24"), // same LAN, second address
		netip.MustParsePrefix("10.20.30.40/8"),   // narrowed to its /24
		netip.MustParsePrefix("169.254.3.4/16"),  // link-local
		netip.MustParsePrefix("8.8.8.8/24"),      // public
		netip.MustParsePrefix("fe80::1/64"),
		netip.MustParsePrefix("172.16.5.9/26"), // smaller than /24: kept as is
		netip.MustParsePrefix("10.0.0.1/24"),   // past MaxScanNetworks
	}
	got := LocalNetworks(in)
	want := []string{"192.168.1.0/24", "10.20.30.0/24", "172.16.5.0/26"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestDiscoveredPrinters(t *testing.T) {
	usb := drivers.Found{Kind: drivers.SchemeUSB, URL: "usb://04b8:0202", Name: "/dev/usb/lp0", VendorID: 0x04b8, ProductID: 0x0202, Model: "EPSON TM-T20II"}
	tcp := drivers.Found{Kind: drivers.SchemeTCP, URL: "tcp://192.168.1.50:9100", Name: "192.168.1.50:9100", Answers: true}
	ttyS := drivers.Found{Kind: drivers.SchemeSerial, URL: "serial:///dev/ttyS0", Name: "/dev/ttyS0"}
	ttyUSB := drivers.Found{Kind: drivers.SchemeSerial, URL: "serial:///dev/ttyUSB0", Name: "/dev/ttyUSB0", VendorID: 0x067b, ProductID: 0x2303, Product: "USB-Serial Controller"}
	for _, c := range []struct {
		f    drivers.Found
		take bool
		desc string
	}{
		{usb, true, "USB printer EPSON TM-T20II (USB 04b8:0202) at /dev/usb/lp0"},
		{tcp, true, "network printer port at 192.168.1.50:9100, answers ESC/POS status queries"},
		{ttyS, false, "serial port /dev/ttyS0"},
		{ttyUSB, true, "serial port /dev/ttyUSB0 USB-Serial Controller (USB 067b:2303)"},
	} {
		if got := TakenByDefault(c.f); got != c.take {
			t.Errorf("TakenByDefault(%s) = %v", c.f.Name, got)
		}
		if got := Describe(c.f); got != c.desc {
			t.Errorf("Describe(%s) = %q, want %q", c.f.Name, got, c.desc)
		}
	}
	taken := map[string]bool{"net1": true}
	if n := NameFor(tcp, taken); n != "net2" {
		t.Errorf("NameFor = %s, want net2", n)
	}
	if n := NameFor(usb, taken); n != "usb1" {
		t.Errorf("NameFor = %s, want usb1", n)
	}
}
