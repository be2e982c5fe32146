// Package probe checks the printers a config names as printgate printers
// and printgate doctor show them: each URL parsed, each printer asked for
// its status and capabilities through its own transport, in parallel, the
// way the agent's device talks to it, and the outcome put in words.
package probe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"printgate/agent"
	"printgate/agent/config"
	"printgate/drivers"
	"printgate/drivers/escpos"
)

// Printer is one [[printers]] entry of the config, as far as a probe
// needs it.
type Printer struct {
	Name string
	URL  string
	// ExpectAnswers is set when the printer's profile promises status
	// answers, as the agent reads it: silence is then "not answering".
	ExpectAnswers bool
}

// Configured lists the [[printers]] of cfg as Check takes them.
func Configured(cfg *config.Config) []Printer {
	out := make([]Printer, 0, len(cfg.Printers))
	for _, p := range cfg.Printers {
		out = append(out, Printer{Name: p.Name, URL: p.URL, ExpectAnswers: p.Profile.Ack != escpos.AckNone})
	}
	return out
}

// Status is what Check found of one printer.
type Status struct {
	Printer
	Err   error              // the URL does not parse
	Check escpos.CheckResult // valid when Err is nil
}

// Check parses each printer's URL and, when probe is set, checks
// the printers in parallel through the transport of their URL, as the agent
// would connect; timeout bounds each printer.
func Check(ctx context.Context, list []Printer, probe bool, timeout time.Duration) []Status {
	out := make([]Status, len(list))
	var (
		checks []escpos.PrinterCheck
		idx    []int
	)
	for i, p := range list {
		out[i] = Status{Printer: p}
		t, err := drivers.ParseURL(p.URL)
		if err != nil {
			out[i].Err = err
			continue
		}
		if !probe {
			out[i].Check = escpos.CheckResult{Health: escpos.HealthNotProbed, Err: errors.New("skipped (--no-probe)")}
			continue
		}
		checks = append(checks, sessionCheck(t, p.ExpectAnswers, timeout))
		idx = append(idx, i)
	}
	if len(checks) == 0 {
		return out
	}
	// Each check is bounded by timeout; the total by the rounds needed at
	// the concurrency cap, plus a little for closing connections.
	rounds := (len(checks) + escpos.DefaultCheckConcurrency - 1) / escpos.DefaultCheckConcurrency
	ctx, cancel := context.WithTimeout(ctx, time.Duration(rounds)*timeout+time.Second)
	defer cancel()
	for j, r := range escpos.CheckPrinters(ctx, checks, escpos.DefaultCheckConcurrency) {
		out[idx[j]].Check = r
	}
	return out
}

// sessionCheck is the check of the printer at t: dialled through the
// transport of its URL with the session options of agent.OpenDevice, so a
// probe talks to the printer as the agent will (a serial line gets the
// agent's write timeout); timeout bounds it.
func sessionCheck(t drivers.Target, expectAnswers bool, timeout time.Duration) escpos.PrinterCheck {
	return escpos.PrinterCheck{
		Dial:    func(ctx context.Context) (escpos.Conn, error) { return drivers.OpenTarget(ctx, t, drivers.Options{}) },
		Options: escpos.CheckOptions{Timeout: timeout, Session: agent.DeviceSession(t, expectAnswers, escpos.SessionOptions{})},
	}
}

// Describe gives a configured printer's state in words ("paper out") and
// what else a technician should know: why it is offline or not answering,
// or what it was found to answer.
func (c Status) Describe() (state, detail string) {
	if c.Err != nil {
		return "bad url", c.Err.Error()
	}
	r := c.Check
	state = strings.ReplaceAll(string(r.Health), "_", " ")
	if r.Err != nil {
		return state, r.Err.Error()
	}
	var d []string
	if r.Probed {
		switch {
		case r.OneWay():
			d = append(d, "one-way")
		case !r.Caps.InOrderProbed:
			d = append(d, "real-time status (in-order answers not probed while not ready)")
		default:
			var caps []string
			if r.Caps.ProcessID {
				caps = append(caps, "process-id barrier")
			}
			if r.Caps.TransmitStatus {
				caps = append(caps, "transmit status")
			}
			if r.Caps.RealTime {
				caps = append(caps, "real-time status")
			}
			d = append(d, strings.Join(caps, ", "))
		}
		if r.Caps.InOrderProbed {
			d[0] += fmt.Sprintf(" (jobs confirmed %q)", r.Caps.Confirmation())
		}
		if id := strings.TrimSpace(r.Caps.Maker + " " + r.Caps.Model); id != "" {
			d = append(d, id)
		}
	}
	if r.Status.PaperNearEnd {
		d = append(d, "paper near end")
	}
	if r.Health == escpos.HealthError || r.Health == escpos.HealthOffline {
		d = append(d, "status "+r.Status.String())
	}
	return state, strings.Join(d, "; ")
}
