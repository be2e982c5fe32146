// Package lanescan finds printers for the manager page's "add a printer":
// serial ports, USB printers and Windows printer queues on this PC, and
// port-9100 printers on its
// LAN. It holds no state; the page's backend (agent/daemon) calls it.
package lanescan

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"printgate/drivers"
)

// Discover lists serial ports, USB printers and Windows printer queues on
// this PC. One kind failing does not hide the others' results; the error
// says what failed, and is returned alone only when all did.
func Discover() ([]drivers.Found, error) {
	serial, serr := drivers.DiscoverSerial()
	usb, uerr := drivers.DiscoverUSB()
	queues, qerr := drivers.DiscoverWinspool()
	found := append(append(serial, usb...), queues...)
	if serr != nil {
		serr = fmt.Errorf("serial ports: %w", serr)
	}
	if uerr != nil {
		uerr = fmt.Errorf("USB printers: %w", uerr)
	}
	if qerr != nil {
		qerr = fmt.Errorf("Windows printer queues: %w", qerr)
	}
	return found, errors.Join(serr, uerr, qerr)
}

// Scan looks for printers listening on port (0 means
// drivers.DefaultTCPPort; tests point it at an emulator) on cidr, or on this PC's own
// IPv4 networks when cidr is "", each cut down to the largest network
// ScanTCP accepts around the PC's address. progress, if set, counts hosts
// over every network, as one scan.
func Scan(ctx context.Context, cidr string, port int, progress func(done, total int)) ([]drivers.Found, error) {
	nets := []string{cidr}
	if cidr == "" {
		own, err := localNetworks()
		if err != nil {
			return nil, err
		}
		if len(own) == 0 {
			return nil, errors.New("scan: this PC has no IPv4 network up besides loopback; enter the printers' network, such as 192.168.1.0/24")
		}
		nets = own
	}
	// Progress counts hosts over every network, as one scan. ScanTCP calls
	// it from one goroutine at a time and has returned before base moves.
	total := 0
	for _, n := range nets {
		total += hostsIn(n)
	}
	base := 0
	var found []drivers.Found
	for _, n := range nets {
		opts := drivers.ScanOptions{Probe: true}
		if progress != nil {
			opts.Progress = func(done, of int) {
				if len(nets) == 1 {
					progress(done, of)
					return
				}
				progress(base+done, total)
			}
		}
		f, err := drivers.ScanTCP(ctx, n, port, opts)
		found = append(found, f...)
		if err != nil {
			return found, fmt.Errorf("scan for printers: %w", err)
		}
		base += hostsIn(n)
	}
	return found, nil
}

// hostsIn is how many hosts ScanTCP tries in cidr (network and broadcast
// addresses left out), for progress across several networks.
func hostsIn(cidr string) int {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return 1 // one address
	}
	bits := p.Addr().BitLen() - p.Bits()
	n := 1 << bits
	if p.Addr().Is4() && bits >= 2 {
		n -= 2
	}
	return n
}

// localNetworks lists this PC's IPv4 networks (interfaces up, not
// loopback), each narrowed around the PC's own address to at most
// drivers.MaxScanHostBits host bits.
func localNetworks() ([]string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("scan: list network interfaces: %w", err)
	}
	seen := map[netip.Prefix]bool{}
	var out []string
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, ad := range addrs {
			ipn, ok := ad.(*net.IPNet)
			if !ok {
				continue
			}
			p, ok := scanPrefix(ipn)
			if ok && !seen[p] {
				seen[p] = true
				out = append(out, p.String())
			}
		}
	}
	return out, nil
}

// scanPrefix is the network of an interface address to scan: IPv4 only,
// not loopback or link-local, at most drivers.MaxScanHostBits host bits.
func scanPrefix(ipn *net.IPNet) (netip.Prefix, bool) {
	addr, ok := netip.AddrFromSlice(ipn.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	addr = addr.Unmap()
	if !addr.Is4() || addr.IsLoopback() || addr.IsLinkLocalUnicast() {
		return netip.Prefix{}, false
	}
	ones, _ := ipn.Mask.Size()
	ones = max(ones, 32-drivers.MaxScanHostBits)
	return netip.PrefixFrom(addr, ones).Masked(), true
}
