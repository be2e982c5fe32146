package installer

import (
	"strings"
	"testing"
)

// TestServiceUsesOwnUnit ensures kardianos writes installer.SystemdUnit,
// running `printgate run` with the absolute config path, not its template.
func TestServiceUsesOwnUnit(t *testing.T) {
	opts := serviceOptions("/usr/local/bin/printgate", "/etc/printgate/printgate.toml")
	unit, _ := opts["SystemdScript"].(string)
	for _, want := range []string{"ExecStart=/usr/local/bin/printgate run --config /etc/printgate/printgate.toml\n", "User=printgate\n", "ProtectSystem=strict\n"} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %q:\n%s", want, unit)
		}
	}
	if strings.Contains(unit, "{{") {
		t.Error("the unit has template actions kardianos would run")
	}
	if _, err := NewService("/usr/local/bin/printgate", "/etc/printgate/printgate.toml"); err != nil {
		t.Fatal(err)
	}
}

func TestCheckServicePaths(t *testing.T) {
	if err := CheckServicePaths("/root/printgate", "/etc/printgate/printgate.toml"); err == nil || !strings.Contains(err.Error(), "install -m 0755") {
		t.Errorf("binary in /root: %v", err)
	}
	if err := CheckServicePaths("/usr/local/bin/printgate", "/srv/printgate.toml"); err == nil || !strings.Contains(err.Error(), "--config-only") {
		t.Errorf("config outside /etc/printgate: %v", err)
	}
	if err := CheckServicePaths("/usr/bin/printgate", "/etc/printgate/printgate.toml"); err != nil {
		t.Error(err)
	}
}
