package drivers

import (
	"fmt"
	"net"
	"net/netip"
)

// MaxScanNetworks bounds how many of this PC's networks a scan takes: a
// store PC has one LAN, maybe a second adapter; more is a VPN or a virtual
// switch whose hosts are not the store's printers.
const MaxScanNetworks = 3

// ScanRanges names the networks a scan of this PC's own LAN may cover, for
// the page and install to say which they scanned: the private IPv4 ranges
// of RFC 1918. A public address is never scanned, as a shop's printers
// are never on one and its neighbours' hosts may be.
const ScanRanges = "10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16"

// LocalScanNetworks picks the networks to scan for printers from the PC's
// interface addresses, the one rule of `printgate install` and the page's
// scan: private IPv4 networks only (ScanRanges), each narrowed to the /24
// around the PC's own address, since a shop's printers sit next to its PC
// and a larger scan is slow and looks like an attack. Loopback, link-local,
// public (CGNAT included) and IPv6 addresses are left out; so are
// duplicates, and all past MaxScanNetworks.
func LocalScanNetworks(addrs []netip.Prefix) []string {
	var out []string
	seen := map[netip.Prefix]bool{}
	for _, a := range addrs {
		ip := a.Addr().Unmap()
		if !ip.Is4() || !ip.IsPrivate() {
			continue
		}
		p, err := ip.Prefix(max(a.Bits(), 24))
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

// ScanAllowed reports whether a network named for a scan may be scanned:
// inside a private range (ScanRanges), or loopback (this PC). Checked
// before any connection, so a network typed by mistake reaches no one.
func ScanAllowed(p netip.Prefix) bool {
	p = p.Masked()
	a := p.Addr().Unmap()
	if !a.Is4() {
		return false
	}
	for _, r := range []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "127.0.0.0/8"} {
		rp := netip.MustParsePrefix(r)
		if rp.Contains(a) && p.Bits() >= rp.Bits() {
			return true
		}
	}
	return false
}

// InterfacePrefixes lists the addresses of the PC's interfaces that are up,
// with their prefix lengths, for LocalScanNetworks.
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
