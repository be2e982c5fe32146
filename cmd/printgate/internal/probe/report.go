package probe

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"text/tabwriter"

	"printgate/agent/config"
	"printgate/drivers"
)

// Load reads the [[printers]] of the config at path. A default
// config that does not exist yields none, so the command still lists what
// it discovers on a machine that is not set up yet.
func Load(path string, explicit bool) ([]Printer, error) {
	cfg, err := config.Load(path)
	if err != nil {
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return Configured(cfg), nil
}

// Report is what printgate printers shows: the configured printers as
// Check found them, the printers discovered on this machine and network,
// and what could not be listed.
type Report struct {
	Configured []Status
	Discovered []drivers.Found
	Warnings   []string
}

// JSONConfigured is one configured printer in JSONReport.
type JSONConfigured struct {
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
	Capabilities *JSONCaps `json:"capabilities,omitempty"`
}

// JSONCaps is what the probe found the printer answers.
type JSONCaps struct {
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

// JSONFound is one discovered printer or port in JSONReport.
type JSONFound struct {
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

// JSONReport is the report's JSON form; its field names are the
// command's output.
type JSONReport struct {
	Configured []JSONConfigured `json:"configured"`
	Discovered []JSONFound      `json:"discovered"`
	Warnings   []string         `json:"warnings,omitempty"`
}

// JSON is the report as printgate printers --json prints it.
func (r Report) JSON() JSONReport {
	out := JSONReport{Configured: []JSONConfigured{}, Discovered: []JSONFound{}, Warnings: r.Warnings}
	for _, c := range r.Configured {
		out.Configured = append(out.Configured, configuredJSON(c))
	}
	for _, f := range r.Discovered {
		j := JSONFound{Kind: string(f.Kind), URL: f.URL, Device: f.Name, SerialNumber: f.SerialNumber, Product: f.Product, Model: f.Model}
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

func configuredJSON(c Status) JSONConfigured {
	j := JSONConfigured{Name: c.Name, URL: c.URL}
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
		j.Capabilities = &JSONCaps{
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

// WriteText writes the report as the table printgate printers shows; with
// suggestScan an empty DISCOVERED section suggests --scan.
func (r Report) WriteText(w io.Writer, suggestScan bool) {
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

// Discover lists the serial ports, the USB printers and the Windows
// printer queues of this machine, through the listings given; one that
// fails is named in a warning and does not hide the others.
func Discover(serial, usb, spooler func() ([]drivers.Found, error)) (found []drivers.Found, warnings []string) {
	for _, src := range []struct {
		name string
		fn   func() ([]drivers.Found, error)
	}{{"serial ports", serial}, {"usb printers", usb}, {"Windows printer queues", spooler}} {
		f, err := src.fn()
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("listing %s: %v", src.name, err))
		}
		found = append(found, f...)
	}
	return found, warnings
}
