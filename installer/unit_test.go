package installer

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the checked-in unit file from SystemdUnit")

// unitDirectives reads a unit file into section → key → values, the way
// systemd does for the keys checked here (later lines add values).
func unitDirectives(t *testing.T, text string) map[string]map[string][]string {
	t.Helper()
	out := map[string]map[string][]string{}
	section := ""
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
			out[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("line %d %q is not key=value in a section", i+1, line)
			}
			out[section][k] = append(out[section][k], v)
		}
	}
	return out
}

func TestSystemdUnitDirectives(t *testing.T) {
	u := unitDirectives(t, SystemdUnit(UnitOptions{Exe: "/usr/local/bin/printgate", Config: "/etc/printgate/printgate.toml"}))
	want := map[string]map[string]string{
		"Unit": {"After": "network-online.target", "StartLimitIntervalSec": "0"},
		"Service": {
			"ExecStart":              "/usr/local/bin/printgate run --config /etc/printgate/printgate.toml",
			"ExecReload":             "/bin/kill -HUP $MAINPID",
			"User":                   "printgate",
			"Group":                  "printgate",
			"SupplementaryGroups":    "lp dialout",
			"Restart":                "on-failure",
			"RestartSec":             "2s",
			"RestartSteps":           "10",
			"RestartMaxDelaySec":     "2min",
			"ProtectSystem":          "strict",
			"ProtectHome":            "yes",
			"PrivateTmp":             "yes",
			"NoNewPrivileges":        "yes",
			"StateDirectory":         "printgate",
			"ConfigurationDirectory": "printgate",
			"ReadWritePaths":         "/var/lib/printgate /etc/printgate",
		},
		"Install": {"WantedBy": "multi-user.target"},
	}
	for sec, keys := range want {
		for k, v := range keys {
			got := u[sec][k]
			if len(got) != 1 || got[0] != v {
				t.Errorf("[%s] %s = %q, want exactly %q", sec, k, got, v)
			}
		}
	}
	// Printers are devices: a private /dev would hide them.
	if v, ok := u["Service"]["PrivateDevices"]; ok {
		t.Errorf("PrivateDevices=%v set: it hides /dev/usb/lp* and /dev/tty* from the agent", v)
	}

	old := unitDirectives(t, SystemdUnit(UnitOptions{Exe: "/usr/bin/printgate", Config: "/etc/printgate/printgate.toml", NoRestartSteps: true}))
	for _, k := range []string{"RestartSteps", "RestartMaxDelaySec"} {
		if _, ok := old["Service"][k]; ok {
			t.Errorf("NoRestartSteps unit still has %s", k)
		}
	}
	if got := old["Service"]["Restart"]; !slices.Equal(got, []string{"on-failure"}) {
		t.Errorf("NoRestartSteps unit Restart = %q", got)
	}
}

func TestSystemdQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/bin/printgate":        "/usr/bin/printgate",
		"/opt/print gate/printgate": `"/opt/print gate/printgate"`,
		"/opt/100%/printgate":       "/opt/100%%/printgate",
		`/opt/a"b/printgate`:        `"/opt/a\"b/printgate"`,
		"/opt/$HOME/printgate":      "/opt/$$HOME/printgate",
	} {
		if got := systemdQuote(in); got != want {
			t.Errorf("systemdQuote(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSystemdVersion(t *testing.T) {
	if v := SystemdVersion("systemd 252 (252.39-1~deb12u2)\n+PAM +AUDIT"); v != 252 {
		t.Errorf("got %d, want 252", v)
	}
	if v := SystemdVersion("bash: systemctl: command not found"); v != 0 {
		t.Errorf("got %d, want 0", v)
	}
}

func TestUnsafeServicePath(t *testing.T) {
	for _, p := range []string{"/root/printgate", "/home/ann/printgate", "/tmp/x/printgate.toml"} {
		if UnsafeServicePath(p) == "" {
			t.Errorf("%s accepted; the sandbox hides it", p)
		}
	}
	for _, p := range []string{"/usr/local/bin/printgate", "/etc/printgate/printgate.toml", "/opt/homebrew/printgate"} {
		if why := UnsafeServicePath(p); why != "" {
			t.Errorf("%s refused: %s", p, why)
		}
	}
}

// TestPackagedUnitFile keeps the unit the .deb ships equal to the one
// install writes. Run with -update after changing SystemdUnit.
func TestPackagedUnitFile(t *testing.T) {
	checkGolden(t, filepath.Join("systemd", "printgate.service"), PackagedUnit())
	checkGolden(t, filepath.Join("deb", "printgate.toml"), string(PackagedConfig()))
}

func checkGolden(t *testing.T, path, want string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s differs from what the installer package generates; run go test ./installer -run TestPackagedUnitFile -update", path)
	}
}

// TestSystemdAnalyzeVerify has systemd check the unit where its tools are
// installed. Any complaint fails the test, except the two growing-delay
// keys on a systemd older than RestartStepsMinSystemd, which ignores them.
func TestSystemdAnalyzeVerify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	exe, err := os.Executable() // verify wants ExecStart to exist
	if err != nil {
		t.Fatal(err)
	}
	version := 0
	if out, err := exec.Command("systemctl", "--version").Output(); err == nil {
		version = SystemdVersion(string(out))
	}
	dir := t.TempDir()
	unit := filepath.Join(dir, "printgate.service")
	if err := os.WriteFile(unit, []byte(SystemdUnit(UnitOptions{Exe: exe, Config: LinuxConfigPath})), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sa, "verify", unit)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	var complaints []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if line == "" {
			continue
		}
		if version > 0 && version < RestartStepsMinSystemd &&
			(strings.Contains(line, "Unknown key 'RestartSteps'") || strings.Contains(line, "Unknown key 'RestartMaxDelaySec'") ||
				strings.Contains(line, "Unknown key name 'RestartSteps'") || strings.Contains(line, "Unknown key name 'RestartMaxDelaySec'")) {
			continue
		}
		complaints = append(complaints, line)
	}
	if runErr != nil || len(complaints) > 0 {
		t.Errorf("systemd-analyze verify (systemd %d): %v\n%s", version, runErr, strings.Join(complaints, "\n"))
	}
}
