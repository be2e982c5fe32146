package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"time"

	"printgate/agent/config"
	"printgate/cmd/printgate/internal/probe"
	"printgate/drivers"
	"printgate/drivers/escpos"
)

func init() {
	register("printers", command{summary: "list configured printers and printers found on this machine or network", run: runPrinters})
}

// printersEnv is where runPrinters gets its printers from; tests replace the
// parts that depend on the machine.
type printersEnv struct {
	// configured returns the printers of the config at path; explicit says
	// whether the user named the file (a missing default config is fine).
	configured func(path string, explicit bool) ([]probe.Printer, error)
	serial     func() ([]drivers.Found, error)
	usb        func() ([]drivers.Found, error)
	spooler    func() ([]drivers.Found, error)
	scan       func(ctx context.Context, cidr string, port int, opts drivers.ScanOptions) ([]drivers.Found, error)
}

var defaultPrintersEnv = printersEnv{
	configured: probe.Load,
	serial:     drivers.DiscoverSerial,
	usb:        drivers.DiscoverUSB,
	spooler:    drivers.DiscoverWinspool,
	scan:       drivers.ScanTCP,
}

func runPrinters(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return printersCmd(ctx, defaultPrintersEnv, args, stdout, stderr)
}

func printersCmd(ctx context.Context, env printersEnv, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("printers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scan := fs.String("scan", "", "also look for network printers in `CIDR` (at most a /22), e.g. 192.168.1.0/24")
	port := fs.Int("port", drivers.DefaultTCPPort, "TCP `port` to scan for")
	timeout := fs.Duration("timeout", 500*time.Millisecond, "connect timeout per scanned host")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	noProbe := fs.Bool("no-probe", false, "do not connect to the configured printers (their state shows as not probed)")
	probeTimeout := fs.Duration("probe-timeout", escpos.DefaultCheckTimeout, "how long to spend on each configured printer (connect, probe, status); they are probed in parallel")
	configPath := fs.String("config", config.DefaultConfigPath(), "the config `file` whose printers to list")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: printgate printers [--config FILE] [--no-probe] [--scan CIDR] [--port 9100] [--json]")
		fmt.Fprintln(stderr, "\nLists the configured printers with the state each one reports (ready, paper out,")
		fmt.Fprintln(stderr, "cover open, offline, not answering) and what it can confirm, then the serial")
		fmt.Fprintln(stderr, "ports, USB printers and Windows printer queues of this machine; with --scan also")
		fmt.Fprintln(stderr, "hosts answering on the raw printing port. Probing sends status queries only:")
		fmt.Fprintln(stderr, "nothing is printed (a Windows printer queue is sent nothing at all).")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	if *port < 1 || *port > 65535 {
		fmt.Fprintf(stderr, "printgate printers: bad --port %d: want 1 to 65535\n", *port)
		return 2
	}
	if *probeTimeout <= 0 {
		fmt.Fprintf(stderr, "printgate printers: bad --probe-timeout %v: want more than 0, e.g. 3s\n", *probeTimeout)
		return 2
	}

	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "config" })
	configured, err := env.configured(*configPath, explicit)
	if err != nil {
		fmt.Fprintf(stderr, "printgate printers: %v\n", err)
		return 1
	}
	rep := probe.Report{Configured: probe.Check(ctx, configured, !*noProbe, *probeTimeout)}
	rep.Discovered, rep.Warnings = probe.Discover(env.serial, env.usb, env.spooler)
	code := 0
	if *scan != "" {
		if pfx, ok := scanPrefix(*scan); ok && !drivers.ScanAllowed(pfx) {
			fmt.Fprintf(stderr, "printgate printers: %s is not a private network (%s): printgate scans no other, so it probes no stranger's hosts\nfix: scan the printers' own network, such as 192.168.1.0/24 (the printer's self-test page shows its address)\n", *scan, drivers.ScanRanges)
			return 2
		}
		p := &probe.Progress{W: stderr, CIDR: *scan}
		found, err := env.scan(ctx, *scan, *port, drivers.ScanOptions{Timeout: *timeout, Probe: true, Progress: p.Report})
		p.Finish()
		rep.Discovered = append(rep.Discovered, found...)
		if err != nil {
			fmt.Fprintf(stderr, "printgate printers: %v\n", err)
			if len(found) == 0 && !errors.Is(err, context.Canceled) {
				// Nothing was scanned: the network was refused up front.
				return 2
			}
			code = 1
		}
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(stderr, "printgate printers: warning: %s\n", w)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		// Names, URLs and queue names are shown as written ("Bar & Grill").
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rep.JSON()); err != nil {
			fmt.Fprintf(stderr, "printgate printers: %v\n", err)
			return 1
		}
		return code
	}
	rep.WriteText(stdout, *scan == "")
	return code
}

// scanPrefix reads --scan's network (a CIDR or one address) for the
// private-ranges check; what it cannot read, ScanTCP refuses with its own
// words.
func scanPrefix(s string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p, true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}
