package daemon

import "testing"

// TestEmulatedOnlyOffersNoDevices ensures the demo's page offers none of
// this PC's serial ports or USB printers to add (run as root, the demo
// once offered the PC's own /dev/ttyS0): its printers are emulated.
func TestEmulatedOnlyOffersNoDevices(t *testing.T) {
	found, err := pageBackend{emulatedOnly: true}.Discover()
	if err != nil || len(found) != 0 {
		t.Errorf("Discover in the demo = %v, %v; want nothing", found, err)
	}
}
