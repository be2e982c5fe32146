package drivers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// USBLP is a printer bound to the Linux usblp driver, as sysfs describes it.
type USBLP struct {
	Name         string // lp0
	Path         string // /dev/usb/lp0
	VendorID     uint16
	ProductID    uint16
	SerialNumber string
	Manufacturer string // USB string descriptor
	Product      string // USB string descriptor
	DeviceID     DeviceID
}

// URL returns the printer URL naming this device by VID:PID, which survives
// replugging into another port (lpN numbers do not).
func (u USBLP) URL() string {
	return Target{Scheme: SchemeUSB, VendorID: u.VendorID, ProductID: u.ProductID}.String()
}

// ListUSBLP lists usblp printers from the sysfs tree at root (normally
// /sys): each /class/usbmisc/lpN whose device link leads to a USB interface
// directory; the parent of that directory is the USB device with idVendor,
// idProduct and serial. A missing usbmisc class means no usblp printer (the
// module is loaded on first plug), not an error.
func ListUSBLP(root string) ([]USBLP, error) {
	dir := filepath.Join(root, "class", "usbmisc")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list usb printers: %w", err)
	}
	var out []USBLP
	var errs []error
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, "lp") {
			continue
		}
		iface, err := filepath.EvalSymlinks(filepath.Join(dir, name, "device"))
		if errors.Is(err, os.ErrNotExist) {
			// The kernel is removing it (cable pulled): its class link
			// outlives the device for a moment. It is not there.
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("usb printer %s: %w", name, err))
			continue
		}
		dev := filepath.Dir(iface)
		u := USBLP{Name: name, Path: "/dev/usb/" + name}
		vid, err1 := readHex16(filepath.Join(dev, "idVendor"))
		pid, err2 := readHex16(filepath.Join(dev, "idProduct"))
		if err := errors.Join(err1, err2); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // removed since the link was read
			}
			errs = append(errs, fmt.Errorf("usb printer %s: %w", name, err))
			continue
		}
		u.VendorID, u.ProductID = vid, pid
		u.SerialNumber = readAttr(filepath.Join(dev, "serial"))
		u.Manufacturer = readAttr(filepath.Join(dev, "manufacturer"))
		u.Product = readAttr(filepath.Join(dev, "product"))
		if id := readAttr(filepath.Join(iface, "ieee1284_id")); id != "" {
			u.DeviceID = ParseDeviceID(id)
		}
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return lpLess(out[i].Name, out[j].Name) })
	return out, errors.Join(errs...)
}

// lpLess orders lp2 before lp10.
func lpLess(a, b string) bool {
	na, ea := strconv.Atoi(strings.TrimPrefix(a, "lp"))
	nb, eb := strconv.Atoi(strings.TrimPrefix(b, "lp"))
	if ea == nil && eb == nil {
		return na < nb
	}
	return a < b
}

func readAttr(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func readHex16(p string) (uint16, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 16, 16)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", p, err)
	}
	return uint16(v), nil
}

// resolveUSBLP finds the /dev/usb/lpN path of the printer with the given
// VID:PID (and serial number, when not empty) in the sysfs tree at root.
// Not found wraps ENODEV, so the error is retryable: the printer may be
// switched off or unplugged for a moment.
func resolveUSBLP(root string, vid, pid uint16, serial string) (string, error) {
	all, listErr := ListUSBLP(root)
	var match []USBLP
	for _, u := range all {
		if u.VendorID == vid && u.ProductID == pid && (serial == "" || u.SerialNumber == serial) {
			match = append(match, u)
		}
	}
	want := fmt.Sprintf("%04x:%04x", vid, pid)
	if serial != "" {
		want += " with serial " + serial
	}
	switch len(match) {
	case 1:
		return match[0].Path, nil
	case 0:
		var seen []string
		for _, u := range all {
			seen = append(seen, fmt.Sprintf("%s is %04x:%04x", u.Name, u.VendorID, u.ProductID))
		}
		msg := "no usblp printers attached"
		if len(seen) > 0 {
			msg = "attached: " + strings.Join(seen, ", ")
		}
		err := fmt.Errorf("no USB printer %s found (%s): %w", want, msg, syscall.ENODEV)
		if listErr != nil {
			err = errors.Join(err, listErr)
		}
		return "", err
	}
	var names []string
	for _, u := range match {
		names = append(names, fmt.Sprintf("%s serial %q", u.Name, u.SerialNumber))
	}
	return "", fmt.Errorf("%d USB printers match %s (%s): add ?serial=... to the url to pick one", len(match), want, strings.Join(names, ", "))
}
