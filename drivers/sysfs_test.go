package drivers

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

type fakeLP struct {
	name, vid, pid, serial, product, ieee1284 string
}

// fakeSysfs builds a sysfs tree shaped like the kernel's, symlinks included:
// class/usbmisc/lpN -> the usbmisc dir under the USB interface, whose
// device link points back at the interface; the interface's parent is the
// USB device with idVendor and idProduct.
func fakeSysfs(t *testing.T, lps []fakeLP) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("sysfs is Linux's (ListUSBLP runs only there), and the fake one is made of symlinks, which Windows restricts")
	}
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "class", "usbmisc"), 0o755))
	for i, lp := range lps {
		port := "1-" + string(rune('1'+i))
		dev := filepath.Join(root, "devices", "pci0000:00", "0000:00:14.0", "usb1", port)
		iface := filepath.Join(dev, port+":1.0")
		misc := filepath.Join(iface, "usbmisc", lp.name)
		must(os.MkdirAll(misc, 0o755))
		must(os.WriteFile(filepath.Join(dev, "idVendor"), []byte(lp.vid+"\n"), 0o644))
		must(os.WriteFile(filepath.Join(dev, "idProduct"), []byte(lp.pid+"\n"), 0o644))
		if lp.serial != "" {
			must(os.WriteFile(filepath.Join(dev, "serial"), []byte(lp.serial+"\n"), 0o644))
		}
		if lp.product != "" {
			must(os.WriteFile(filepath.Join(dev, "product"), []byte(lp.product+"\n"), 0o644))
		}
		if lp.ieee1284 != "" {
			must(os.WriteFile(filepath.Join(iface, "ieee1284_id"), []byte(lp.ieee1284+"\n"), 0o644))
		}
		must(os.Symlink("../../../"+port+":1.0", filepath.Join(misc, "device")))
		rel, err := filepath.Rel(filepath.Join(root, "class", "usbmisc"), misc)
		must(err)
		must(os.Symlink(rel, filepath.Join(root, "class", "usbmisc", lp.name)))
	}
	return root
}

var twoPrinters = []fakeLP{
	{name: "lp0", vid: "04b8", pid: "0202", serial: "X5A1", product: "TM-T20II",
		ieee1284: "MFG:EPSON;CMD:ESC/POS;MDL:TM-T20II;CLS:PRINTER;DES:EPSON TM-T20II;"},
	{name: "lp10", vid: "0416", pid: "5011", product: "POS58"},
	{name: "lp2", vid: "04b8", pid: "0202", serial: "X5B7"},
}

// TestListUSBLP ensures sysfs is read through its symlinks into VID:PID,
// serial, product and the printer's own model, in lpN order.
func TestListUSBLP(t *testing.T) {
	list, err := ListUSBLP(fakeSysfs(t, twoPrinters))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range list {
		names = append(names, u.Name)
	}
	if strings.Join(names, ",") != "lp0,lp2,lp10" {
		t.Fatalf("order %v, want lp0,lp2,lp10", names)
	}
	u := list[0]
	if u.Path != "/dev/usb/lp0" || u.VendorID != 0x04b8 || u.ProductID != 0x0202 || u.SerialNumber != "X5A1" || u.Product != "TM-T20II" {
		t.Errorf("lp0 = %+v", u)
	}
	if u.DeviceID.Model != "TM-T20II" || u.DeviceID.Manufacturer != "EPSON" || u.DeviceID.CommandSet[0] != "ESC/POS" {
		t.Errorf("lp0 device id = %+v", u.DeviceID)
	}
	if u.URL() != "usb://04b8:0202" {
		t.Errorf("URL = %q", u.URL())
	}
	found := foundUSBLP(list)
	if found[0].Model != "EPSON TM-T20II" || found[0].Kind != SchemeUSB || found[2].Product != "POS58" {
		t.Errorf("found = %+v", found)
	}
}

// TestListUSBLPNoClass ensures a machine without usblp loaded has no USB
// printers rather than an error.
func TestListUSBLPNoClass(t *testing.T) {
	list, err := ListUSBLP(t.TempDir())
	if err != nil || len(list) != 0 {
		t.Fatalf("ListUSBLP = %v, %v", list, err)
	}
}

// TestResolveUSBLP ensures VID:PID picks the one matching printer, a serial
// number settles a tie, and a tie without one is an error that says how to
// fix the URL.
func TestResolveUSBLP(t *testing.T) {
	root := fakeSysfs(t, twoPrinters)
	if p, err := resolveUSBLP(root, 0x0416, 0x5011, ""); err != nil || p != "/dev/usb/lp10" {
		t.Errorf("0416:5011 = %q, %v", p, err)
	}
	if p, err := resolveUSBLP(root, 0x04b8, 0x0202, "X5B7"); err != nil || p != "/dev/usb/lp2" {
		t.Errorf("04b8:0202 X5B7 = %q, %v", p, err)
	}
	_, err := resolveUSBLP(root, 0x04b8, 0x0202, "")
	if err == nil || !strings.Contains(err.Error(), "2 USB printers match 04b8:0202") || !strings.Contains(err.Error(), "?serial=") {
		t.Errorf("tie: %v", err)
	}
	_, err = resolveUSBLP(root, 0x1234, 0x5678, "")
	if !errors.Is(err, syscall.ENODEV) || !strings.Contains(err.Error(), "no USB printer 1234:5678 found") {
		t.Errorf("missing: %v", err)
	}
}

// TestListUSBLPUnplugging ensures a printer whose sysfs entry is going away
// (its device gone, its class link left dangling for a moment, as sysfs
// shows while the cable is pulled) is simply not there: no warning, and an
// open by VID:PID says only that the printer is not found (seen in make
// test-usb, where the half-removed lp0 put an lstat error on a second line
// of the offline message).
func TestListUSBLPUnplugging(t *testing.T) {
	root := fakeSysfs(t, twoPrinters)
	// lp2 is the third printer: port 1-3.
	if err := os.RemoveAll(filepath.Join(root, "devices", "pci0000:00", "0000:00:14.0", "usb1", "1-3")); err != nil {
		t.Fatal(err)
	}
	list, err := ListUSBLP(root)
	if err != nil {
		t.Fatalf("ListUSBLP during an unplug: %v, want no error", err)
	}
	if len(list) != 2 || list[0].Name != "lp0" || list[1].Name != "lp10" {
		t.Fatalf("ListUSBLP = %+v, want lp0 and lp10", list)
	}
	_, err = resolveUSBLP(root, 0x04b8, 0x0202, "X5B7")
	if !errors.Is(err, syscall.ENODEV) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "lstat") {
		t.Errorf("resolve the unplugging printer: %q, want only not found", err)
	}
}
