package drivers

import (
	"strings"
	"testing"

	"golang.org/x/sys/windows"
)

// TestNoUSBPrinterIsNoError ensures that a PC with no USB printer (here
// Wine, which has no usbprint interface class at all) lists none without
// an error, so printers, install, doctor and the page do not warn.
func TestNoUSBPrinterIsNoError(t *testing.T) {
	found, err := discoverUSB()
	if err != nil {
		t.Fatalf("discoverUSB: %v, want no error", err)
	}
	t.Logf("%d USB printers found", len(found))
}

// TestConfigretText ensures a Configuration Manager error is worded
// without the panic of CONFIGRET.Error where CM_MapCrToWin32Err is missing.
func TestConfigretText(t *testing.T) {
	text := configretText(windows.CR_INVALID_POINTER)
	if strings.Contains(text, "PANIC") || text == "" {
		t.Fatalf("configretText = %q", text)
	}
}
