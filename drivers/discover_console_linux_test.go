package drivers

import (
	"os"
	"path/filepath"
	"testing"
)

// TestConsoleIsNoPrinter ensures the serial port that is the machine's
// console is told apart from one a printer may sit on (the demo run as
// root once offered /dev/ttyS0, the VM's console, as a printer).
func TestConsoleIsNoPrinter(t *testing.T) {
	dir := t.TempDir()
	for name, v := range map[string]string{"ttyS0": "Y\n", "ttyS1": "N\n"} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "console"), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := sysClassTTY
	sysClassTTY = dir
	defer func() { sysClassTTY = old }()
	for dev, want := range map[string]bool{"/dev/ttyS0": true, "/dev/ttyS1": false, "/dev/ttyUSB0": false} {
		if got := isConsole(dev); got != want {
			t.Errorf("isConsole(%s) = %v, want %v", dev, got, want)
		}
	}
}
