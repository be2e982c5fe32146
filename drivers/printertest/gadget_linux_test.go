//go:build linux

package printertest

import (
	"path/filepath"
	"testing"
)

// TestGadgetStatus ensures the port status the gadget reports for each
// fault is what usblp's LPGETSTATUS shows for a real printer in it.
func TestGadgetStatus(t *testing.T) {
	for _, c := range []struct {
		f    Faults
		want byte
	}{
		{Faults{}, 0x18},
		{Faults{PaperOut: true}, 0x38},
		{Faults{CoverOpen: true}, 0x10},
		{Faults{CutterError: true}, 0x10},
		{Faults{Offline: true}, 0x08},
		{Faults{PaperNearEnd: true, DrawerOpen: true}, 0x18},
	} {
		if got := gadgetStatus(c.f); got != c.want {
			t.Errorf("gadgetStatus(%+v) = %#02x, want %#02x", c.f, got, c.want)
		}
	}
}

// TestAttachGadgetMissing ensures a missing gadget node is an error at once,
// not a printer waiting forever for it.
func TestAttachGadgetMissing(t *testing.T) {
	p := New(Options{})
	defer p.Close()
	if _, err := p.AttachGadget(filepath.Join(t.TempDir(), "g_printer0")); err == nil {
		t.Fatal("AttachGadget of a missing node: no error")
	}
}
