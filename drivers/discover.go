package drivers

// Found is a printer, or a port that may have one, found by discovery. URL
// is ready to paste into the config.
type Found struct {
	Kind Scheme
	URL  string
	// Name is the device (/dev/ttyUSB0, COM3, /dev/usb/lp0, a USBPRINT
	// interface path) or host:port.
	Name string
	// USB identity, when known.
	VendorID, ProductID uint16
	SerialNumber        string
	// Product is the USB product string.
	Product string
	// Model is the printer's own description, from its IEEE 1284 device id
	// ("EPSON TM-T20II"), when it gave one.
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
