package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
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
	scan       func(ctx context.Context, cidr string, port int, opts drivers.ScanOptions) ([]drivers.Found, error)
}

var defaultPrintersEnv = printersEnv{
	configured: loadConfigured,
	serial:     drivers.DiscoverSerial,
	usb:        drivers.DiscoverUSB,
	scan:       drivers.ScanTCP,
}

// loadConfigured reads the [[printers]] of the config at path. A default
// config that does not exist yields none, so the command still lists what
// it discovers on a machine that is not set up yet.
func loadConfigured(path string, explicit bool) ([]probe.Printer, error) {
	cfg, err := config.Load(path)
	if err != nil {
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return probe.Configured(cfg), nil
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
		fmt.Fprintln(stderr, "ports and USB printers of this machine; with --scan also hosts answering on the")
		fmt.Fprintln(stderr, "raw printing port. Probing sends status queries only: nothing is printed.")
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
	rep := printersReport{Configured: probe.Check(ctx, configured, !*noProbe, *probeTimeout)}
	for _, src := range []struct {
		name string
		fn   func() ([]drivers.Found, error)
	}{{"serial ports", env.serial}, {"usb printers", env.usb}} {
		found, err := src.fn()
		if err != nil {
			// One source failing should not hide the others.
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("listing %s: %v", src.name, err))
		}
		rep.Discovered = append(rep.Discovered, found...)
	}
	code := 0
	if *scan != "" {
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
		if err := enc.Encode(rep.toJSON()); err != nil {
			fmt.Fprintf(stderr, "printgate printers: %v\n", err)
			return 1
		}
		return code
	}
	rep.writeText(stdout, *scan == "")
	return code
}

// printersReport is what the command shows.
type printersReport struct {
	Configured []probe.Status
	Discovered []drivers.Found
	Warnings   []string
}

type jsonConfigured struct {
	Name  string `json:"name"`
	URL   string `json:"url"`
	Error string `json:"error,omitempty"` // the URL does not parse
	// State is an escpos.Health word, or "bad_url".
	State string `json:"state"`
	// Reason says why the state is offline (the dial error), not_answering
	// or not_probed.
	Reason string `json:"reason,omitempty"`
	// Status is the decoded real-time status, as the agent logs it.
	Status       string    `json:"escpos_status,omitempty"`
	PaperNearEnd bool      `json:"paper_near_end,omitempty"`
	Capabilities *jsonCaps `json:"capabilities,omitempty"`
}

// jsonCaps is what the probe found the printer answers.
type jsonCaps struct {
	ProcessID      bool `json:"process_id"`
	TransmitStatus bool `json:"transmit_status"`
	RealTimeStatus bool `json:"real_time_status"`
	OneWay         bool `json:"one_way"`
	// InOrderProbed is false when the printer was not ready: process_id and
	// transmit_status are then unknown.
	InOrderProbed bool `json:"in_order_probed"`
	// Confirmation is the strongest proof a job can get there: printed,
	// consumed or delivered.
	// Empty while in_order_probed is false.
	Confirmation string `json:"confirmation,omitempty"`
	Maker        string `json:"maker,omitempty"`
	Model        string `json:"model,omitempty"`
	Firmware     string `json:"firmware,omitempty"`
}

type jsonFound struct {
	Kind         string `json:"kind"`
	URL          string `json:"url"`
	Device       string `json:"device"`
	VendorID     string `json:"vendor_id,omitempty"`
	ProductID    string `json:"product_id,omitempty"`
	SerialNumber string `json:"serial_number,omitempty"`
	Product      string `json:"product,omitempty"`
	Model        string `json:"model,omitempty"`
	// Status is the DLE EOT 1 answer of a scanned host, in hex.
	Status string `json:"escpos_status,omitempty"`
}

type jsonReport struct {
	Configured []jsonConfigured `json:"configured"`
	Discovered []jsonFound      `json:"discovered"`
	Warnings   []string         `json:"warnings,omitempty"`
}

func (r printersReport) toJSON() jsonReport {
	out := jsonReport{Configured: []jsonConfigured{}, Discovered: []jsonFound{}, Warnings: r.Warnings}
	for _, c := range r.Configured {
		out.Configured = append(out.Configured, configuredJSON(c))
	}
	for _, f := range r.Discovered {
		j := jsonFound{Kind: string(f.Kind), URL: f.URL, Device: f.Name, SerialNumber: f.SerialNumber, Product: f.Product, Model: f.Model}
		if f.VendorID != 0 || f.ProductID != 0 {
			j.VendorID, j.ProductID = fmt.Sprintf("%04x", f.VendorID), fmt.Sprintf("%04x", f.ProductID)
		}
		if f.Answers {
			j.Status = fmt.Sprintf("%02x", f.Status)
		}
		out.Discovered = append(out.Discovered, j)
	}
	return out
}

func configuredJSON(c probe.Status) jsonConfigured {
	j := jsonConfigured{Name: c.Name, URL: c.URL}
	if c.Err != nil {
		j.Error, j.State = c.Err.Error(), "bad_url"
		return j
	}
	r := c.Check
	j.State = string(r.Health)
	if r.Err != nil {
		j.Reason = r.Err.Error()
	}
	if r.Status.Answered != 0 {
		j.Status, j.PaperNearEnd = r.Status.String(), r.Status.PaperNearEnd
	}
	if r.Probed {
		j.Capabilities = &jsonCaps{
			ProcessID: r.Caps.ProcessID, TransmitStatus: r.Caps.TransmitStatus, RealTimeStatus: r.Caps.RealTime,
			OneWay: r.OneWay(), InOrderProbed: r.Caps.InOrderProbed,
			Maker: r.Caps.Maker, Model: r.Caps.Model, Firmware: r.Caps.Firmware,
		}
		if r.Caps.InOrderProbed {
			j.Capabilities.Confirmation = r.Caps.Confirmation().String()
		}
	}
	return j
}

func (r printersReport) writeText(w io.Writer, suggestScan bool) {
	fmt.Fprintln(w, "CONFIGURED")
	if len(r.Configured) == 0 {
		fmt.Fprintln(w, "  (none: add [[printers]] entries to the config)")
	} else {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tURL\tSTATE\tDETAILS")
		for _, c := range r.Configured {
			state, detail := c.Describe()
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Name, c.URL, state, detail)
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "\nDISCOVERED")
	if len(r.Discovered) == 0 {
		fmt.Fprint(w, "  (none found")
		if suggestScan {
			fmt.Fprint(w, "; for network printers try --scan 192.168.1.0/24 with your network")
		}
		fmt.Fprintln(w, ")")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  KIND\tURL\tDEVICE\tDETAILS")
	for _, f := range r.Discovered {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", f.Kind, f.URL, f.Name, details(f))
	}
	tw.Flush()
}

func details(f drivers.Found) string {
	var d []string
	if f.Model != "" {
		d = append(d, f.Model)
	}
	if f.VendorID != 0 || f.ProductID != 0 {
		d = append(d, fmt.Sprintf("%04x:%04x", f.VendorID, f.ProductID))
	}
	if f.Product != "" && f.Product != f.Model {
		d = append(d, f.Product)
	}
	if f.SerialNumber != "" {
		d = append(d, "serial "+f.SerialNumber)
	}
	if f.Kind == drivers.SchemeTCP {
		if f.Answers {
			d = append(d, fmt.Sprintf("answers ESC/POS status (%02x)", f.Status))
		} else {
			d = append(d, "port open, no ESC/POS status answer (busy, or not a receipt printer)")
		}
	}
	return strings.Join(d, ", ")
}
