package installer

import (
	"fmt"
	"net/netip"
	"strings"

	"printgate/drivers"
)

// MaxScanNetworks bounds how many networks install scans
// (drivers.MaxScanNetworks, the page's bound too).
const MaxScanNetworks = drivers.MaxScanNetworks

// LocalNetworks picks the networks worth scanning for printers from the
// PC's interface addresses: drivers.LocalScanNetworks, the rule the
// page's scan follows too (private IPv4 only, the /24 around the PC).
func LocalNetworks(addrs []netip.Prefix) []string { return drivers.LocalScanNetworks(addrs) }

// InterfacePrefixes lists the addresses of the PC's interfaces that are up,
// with their prefix lengths, for LocalNetworks.
func InterfacePrefixes() ([]netip.Prefix, error) { return drivers.InterfacePrefixes() }

// Describe says in one line what a discovered printer or port is, for the
// offer and for the comment above its [[printers]] entry.
func Describe(f drivers.Found) string {
	var b strings.Builder
	switch f.Kind {
	case drivers.SchemeTCP:
		fmt.Fprintf(&b, "network printer port at %s", f.Name)
		if f.Answers {
			b.WriteString(", answers ESC/POS status queries")
		}
	case drivers.SchemeUSB:
		b.WriteString("USB printer")
	case drivers.SchemeSerial:
		fmt.Fprintf(&b, "serial port %s", f.Name)
	default:
		fmt.Fprintf(&b, "%s %s", f.Kind, f.Name)
	}
	if f.Model != "" {
		fmt.Fprintf(&b, " %s", f.Model)
	} else if f.Product != "" {
		fmt.Fprintf(&b, " %s", f.Product)
	}
	if f.VendorID != 0 || f.ProductID != 0 {
		fmt.Fprintf(&b, " (USB %04x:%04x)", f.VendorID, f.ProductID)
	}
	if f.Kind == drivers.SchemeUSB && f.Name != "" {
		fmt.Fprintf(&b, " at %s", f.Name)
	}
	return b.String()
}

// TakenByDefault says whether `install --yes` adds f without asking: USB
// printers and hosts answering on the printing port are printers; a serial
// port is taken only with a USB identity (a USB-serial cable or a printer's
// own USB-serial chip), since most machines list built-in serial ports
// with nothing attached.
func TakenByDefault(f drivers.Found) bool {
	if f.Kind == drivers.SchemeSerial {
		return f.VendorID != 0
	}
	return true
}

// NameFor proposes a printer name for f that is not in taken: "net1",
// "usb1", "serial1" and so on. The technician renames it later; tickets
// name printers, so a name must exist before the first ticket.
func NameFor(f drivers.Found, taken map[string]bool) string {
	base := "printer"
	switch f.Kind {
	case drivers.SchemeTCP:
		base = "net"
	case drivers.SchemeUSB:
		base = "usb"
	case drivers.SchemeSerial:
		base = "serial"
	}
	for i := 1; ; i++ {
		n := fmt.Sprintf("%s%d", base, i)
		if !taken[n] {
			return n
		}
	}
}
