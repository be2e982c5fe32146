package drivers

import (
	"os"
	"path/filepath"
	"strings"
)

func discoverUSB() ([]Found, error) {
	list, err := ListUSBLP("/sys")
	return foundUSBLP(list), err
}

// sysClassTTY is where Linux describes its terminals; tests replace it.
var sysClassTTY = "/sys/class/tty"

// isConsole reports whether the serial port dev (/dev/ttyS0) is this
// machine's own console (the kernel's console= port, as on a VM or a
// server): its output goes to whoever watches the console, never to a
// printer, and discovery does not offer it.
func isConsole(dev string) bool {
	b, err := os.ReadFile(filepath.Join(sysClassTTY, filepath.Base(dev), "console"))
	return err == nil && strings.TrimSpace(string(b)) == "Y"
}
