package drivers

import "strings"

// Found is a printer, or a port that may have one, found by discovery. URL
// is ready to paste into the config.
type Found struct {
	Kind Scheme
	URL  string
	// Name is the device (/dev/ttyUSB0, COM3, /dev/usb/lp0, a USBPRINT
	// interface path), host:port, or a Windows printer queue's port (USB001).
	Name string
	// USB identity, when known.
	VendorID, ProductID uint16
	SerialNumber        string
	// Product is the USB product string.
	Product string
	// Model is the printer's own description, from its IEEE 1284 device id
	// ("EPSON TM-T20II"), when it gave one; for a Windows printer queue,
	// the name of its driver.
	Model string
	// Answers is set by ScanTCP with Probe when the host answered DLE EOT 1
	// with a well-formed ESC/POS status byte, which is Status.
	Answers bool
	Status  byte
}

// DiscoverSerial lists serial ports with their USB identity where they have
// one. Most are not printers: the list helps a person pick the right one,
// and Product or VendorID usually gives the printer away.
func DiscoverSerial() ([]Found, error) { return discoverSerial() }

// DiscoverUSB lists USB printers attached to this machine: usblp devices
// described by sysfs on Linux, USBPRINT interfaces on Windows. Their URLs
// name them by VID:PID, which survives replugging.
func DiscoverUSB() ([]Found, error) { return discoverUSB() }

// DiscoverWinspool lists the printer queues of this Windows PC (the
// spooler's local printers, with the port and driver each uses), ready to
// print to as winspool://NAME. On other systems it finds none.
func DiscoverWinspool() ([]Found, error) { return discoverWinspool() }

// winspoolURL is the URL of the queue called name: a '%' in the name is
// escaped, since ParseURL unescapes the queue names that hold one.
func winspoolURL(name string) string {
	return "winspool://" + strings.ReplaceAll(name, "%", "%25")
}

// foundUSBLP turns sysfs descriptions into discovery results.
func foundUSBLP(list []USBLP) []Found {
	out := make([]Found, 0, len(list))
	for _, u := range list {
		out = append(out, Found{
			Kind: SchemeUSB, URL: u.URL(), Name: u.Path,
			VendorID: u.VendorID, ProductID: u.ProductID, SerialNumber: u.SerialNumber,
			Product: u.Product, Model: u.DeviceID.String(),
		})
	}
	return out
}
