package installer

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"printgate/drivers"
)

// MaxScanNetworks bounds how many networks install scans: a store PC has
// one LAN, maybe a second adapter; more is a VPN or a virtual switch whose
// hosts are not the store's printers.
const MaxScanNetworks = 3

// LocalNetworks picks the networks worth scanning for printers from the
// PC's interface addresses: private IPv4 networks only (RFC 1918), each
// narrowed to the /24 around the PC's own address, since a shop's printers
// sit next to its PC and a larger scan is slow and looks like an attack.
// Loopback, link-local, public and IPv6 addresses are left out; so are
// duplicates, and all past MaxScanNetworks.
func LocalNetworks(addrs []netip.Prefix) []string {
	var out []string
	seen := map[netip.Prefix]bool{}
	for _, a := range addrs {
		ip := a.Addr().Unmap()
		if !ip.Is4() || !ip.IsPrivate() {
			continue
		}
		bits := max(a.Bits(), 24)
		p, err := ip.Prefix(bits)
		if err != nil || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p.String())
		if len(out) == MaxScanNetworks {
			break
		}
	}
	return out
}

// InterfacePrefixes lists the addresses of the PC's interfaces that are up,
// with their prefix lengths, for LocalNetworks.
func InterfacePrefixes() ([]netip.Prefix, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("list network interfaces: %w", err)
	}
	var out []netip.Prefix
	for _, in := range ifs {
		if in.Flags&net.FlagUp == 0 || in.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := in.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(n.IP)
			if !ok {
				continue
			}
			ones, _ := n.Mask.Size()
			out = append(out, netip.PrefixFrom(ip.Unmap(), ones))
		}
	}
	return out, nil
}

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
