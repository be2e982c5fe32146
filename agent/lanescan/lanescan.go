// Package lanescan finds printers for the manager page's "add a printer":
// serial ports, USB printers and Windows printer queues on this PC, and
// port-9100 printers on its
// LAN. It holds no state; the page's backend (agent/daemon) calls it.
package lanescan

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

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
		qerr = fmt.Errorf("the Windows printer queues: %w", qerr)
	}
	return found, errors.Join(serr, uerr, qerr)
}

// ErrNoPrivateNetwork is Scan's answer, before any connection, when this PC
// has no address on a private network (drivers.ScanRanges): the page scans
// no other, and says so in the manager's language.
var ErrNoPrivateNetwork = errors.New("scan: this PC has no address on a private network (" + drivers.ScanRanges + "), and printgate scans no other; enter the printer's address instead")

// Networks lists the networks a scan of this PC's LAN covers, by the rule
// `printgate install` follows too (drivers.LocalScanNetworks): the /24
// around each of its private IPv4 addresses.
func Networks() ([]string, error) {
	addrs, err := drivers.InterfacePrefixes()
	if err != nil {
		return nil, fmt.Errorf("scan: %w", err)
	}
	return drivers.LocalScanNetworks(addrs), nil
}

// Scan looks for printers listening on port (0 means
// drivers.DefaultTCPPort; tests point it at an emulator) on cidr, or on
// this PC's own private networks (Networks) when cidr is "". A cidr outside
// the private ranges and loopback is refused before any connection, as is a
// PC with no private network (ErrNoPrivateNetwork). progress, if set,
// counts hosts over every network, as one scan.
func Scan(ctx context.Context, cidr string, port int, progress func(done, total int)) ([]drivers.Found, error) {
	nets := []string{cidr}
	if cidr == "" {
		own, err := Networks()
		if err != nil {
			return nil, err
		}
		if len(own) == 0 {
			return nil, ErrNoPrivateNetwork
		}
		nets = own
	} else if err := allowed(cidr); err != nil {
		return nil, err
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

// allowed refuses a network to scan outside the private ranges and
// loopback (drivers.ScanAllowed), naming the ranges.
func allowed(cidr string) error {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		a, aerr := netip.ParseAddr(cidr)
		if aerr != nil {
			return fmt.Errorf("scan: bad network %q: write it like 192.168.1.0/24", cidr)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if !drivers.ScanAllowed(p) {
		return fmt.Errorf("scan: %s is not a private network (%s): printgate scans no other", cidr, drivers.ScanRanges)
	}
	return nil
}

// Probe tests the one printer at addr (an IP address, with :port when not
// 9100) before the page adds it: a connection and the ESC/POS status
// query, as a scan does. An address outside the private ranges and
// loopback is refused before any connection.
func Probe(ctx context.Context, addr string) (drivers.Found, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		a, aerr := netip.ParseAddr(addr)
		if aerr != nil {
			return drivers.Found{}, fmt.Errorf("%q is not a printer's address: write its IP address, such as 192.168.1.50, or 192.168.1.50:9100", addr)
		}
		ap = netip.AddrPortFrom(a, drivers.DefaultTCPPort)
	}
	a := ap.Addr().Unmap()
	if !drivers.ScanAllowed(netip.PrefixFrom(a, a.BitLen())) {
		return drivers.Found{}, fmt.Errorf("%s is not on a private network (%s): printgate connects to printers there only", a, drivers.ScanRanges)
	}
	found, err := drivers.ScanTCP(ctx, a.String(), int(ap.Port()), drivers.ScanOptions{Probe: true, Timeout: 2 * time.Second})
	if err != nil {
		return drivers.Found{}, fmt.Errorf("test %s: %w", ap, err)
	}
	if len(found) == 0 {
		return drivers.Found{}, fmt.Errorf("nothing answers at %s: check the printer is on, its address (print its self-test page) and the port", netip.AddrPortFrom(a, ap.Port()))
	}
	return found[0], nil
}
