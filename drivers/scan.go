package drivers

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"
)

// MaxScanHostBits bounds ScanTCP to a /22 (1024 addresses) for IPv4: a shop
// network is a /24, and scanning more is slow and looks like an attack to
// whoever runs the network.
const MaxScanHostBits = 10

// ScanOptions tune ScanTCP. The zero value is ready to use.
type ScanOptions struct {
	// Concurrency is how many hosts are tried at once; zero means 64.
	Concurrency int
	// Timeout bounds each connect (and the probe answer); zero means 500 ms,
	// plenty on a LAN.
	Timeout time.Duration
	// Probe sends DLE EOT 1 (10 04 01) after connecting and waits Timeout
	// for the status byte, to tell ESC/POS printers from other services on
	// the port. A printer already serving another connection may not
	// answer, so silence is not proof of "not a printer".
	Probe bool
	// Progress, if set, is called after each host with the number of hosts
	// done and the total, never concurrently and with done increasing.
	Progress func(done, total int)
}

// scanHosts lists the addresses in cidr to try, without the network and
// broadcast addresses of IPv4 prefixes that have them.
func scanHosts(cidr string) ([]netip.Addr, error) {
	var p netip.Prefix
	if strings.Contains(cidr, "/") {
		var err error
		p, err = netip.ParsePrefix(cidr)
		if err != nil {
			return nil, fmt.Errorf("bad network %q: write it like 192.168.1.0/24", cidr)
		}
	} else {
		a, err := netip.ParseAddr(cidr)
		if err != nil {
			return nil, fmt.Errorf("bad network %q: write it like 192.168.1.0/24", cidr)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	p = p.Masked()
	hostBits := p.Addr().BitLen() - p.Bits()
	if hostBits > MaxScanHostBits {
		size := fmt.Sprintf("2^%d", hostBits)
		if hostBits < 32 {
			size = fmt.Sprint(uint64(1) << hostBits)
		}
		return nil, fmt.Errorf("network %s has %s addresses; scan at most a /%d (1024 addresses) at a time, such as the printer's own /24",
			p, size, p.Addr().BitLen()-MaxScanHostBits)
	}
	var hosts []netip.Addr
	for a := p.Addr(); a.IsValid() && p.Contains(a); a = a.Next() {
		hosts = append(hosts, a)
	}
	if p.Addr().Is4() && hostBits >= 2 {
		hosts = hosts[1 : len(hosts)-1]
	}
	return hosts, nil
}

// ScanTCP looks for hosts in cidr that accept connections on port (9100 when
// zero), trying Concurrency hosts at a time. It refuses networks larger than
// a /22. When ctx ends it returns what it found so far with the context's
// error. Results are sorted by address.
func ScanTCP(ctx context.Context, cidr string, port int, opts ScanOptions) ([]Found, error) {
	if port == 0 {
		port = DefaultTCPPort
	}
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("bad port %d: want 1 to 65535", port)
	}
	hosts, err := scanHosts(cidr)
	if err != nil {
		return nil, err
	}
	workers := opts.Concurrency
	if workers <= 0 {
		workers = 64
	}
	workers = min(workers, len(hosts))
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 500 * time.Millisecond
	}

	jobs := make(chan netip.Addr)
	var (
		mu    sync.Mutex
		found []Found
		done  int
		wg    sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range jobs {
				f, ok := scanOne(ctx, netip.AddrPortFrom(a, uint16(port)), timeout, opts.Probe)
				mu.Lock()
				if ok {
					found = append(found, f)
				}
				done++
				if opts.Progress != nil {
					opts.Progress(done, len(hosts))
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, a := range hosts {
		select {
		case jobs <- a:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	sort.Slice(found, func(i, j int) bool { return found[i].addr().Compare(found[j].addr()) < 0 })
	if err := ctx.Err(); err != nil {
		return found, fmt.Errorf("scan %s canceled after %d of %d hosts: %w", cidr, done, len(hosts), err)
	}
	return found, nil
}

func (f Found) addr() netip.AddrPort {
	ap, _ := netip.ParseAddrPort(f.Name)
	return ap
}

func scanOne(ctx context.Context, ap netip.AddrPort, timeout time.Duration, probe bool) (Found, bool) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", ap.String())
	if err != nil {
		return Found{}, false
	}
	defer c.Close()
	f := Found{Kind: SchemeTCP, Name: ap.String(), URL: "tcp://" + ap.String()}
	if probe {
		_ = c.SetDeadline(time.Now().Add(timeout))
		var b [1]byte
		if _, err := c.Write([]byte{0x10, 0x04, 0x01}); err == nil {
			if n, _ := c.Read(b[:]); n == 1 && isRealtimeStatus(b[0]) {
				f.Answers, f.Status = true, b[0]
			}
		}
	}
	return f, true
}

// isRealtimeStatus reports whether b has the fixed bits of every DLE EOT
// answer: bit 1 and bit 4 set, bits 0 and 7 clear (0xx1xx10).
func isRealtimeStatus(b byte) bool { return b&0x93 == 0x12 }
