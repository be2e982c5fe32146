// Package screen draws what printgate's commands show of an agent and an
// install: the status screen, a reload's changes, the task list and the
// next steps after install. The commands decide what to show and where;
// the lines are drawn here, where tests reach them.
package screen

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"printgate/agent/api"
	"printgate/agent/apiclient"
	"printgate/agent/config"
)

// AgentHealth is what `status` learned from the agent's API.
type AgentHealth struct {
	URL      string
	Health   api.Health
	Printers []api.PrinterInfo
	// Err says why the agent could not be asked or did not answer.
	Err error
	// Fix, with Err, is what to do about it; shown on a "fix:" line.
	Fix string
}

// Status draws the status screen: the service, the agent, then one
// line per printer.
func Status(w io.Writer, state string, h AgentHealth) {
	fmt.Fprintf(w, "service   %s\n", state)
	if h.Err != nil {
		fmt.Fprintf(w, "agent     not answering: %v\n", h.Err)
		if h.Fix != "" {
			fmt.Fprintf(w, "fix: %s\n", h.Fix)
		}
		return
	}
	agent := h.Health.Status
	if h.Health.Error != "" {
		agent += ": " + h.Health.Error
	}
	fmt.Fprintf(w, "agent     %s at %s\n", agent, h.URL)
	fmt.Fprintf(w, "cloud     %s\n", h.Health.Link)
	outbox := fmt.Sprintf("%d events waiting for the cloud", h.Health.Outbox)
	if h.Health.OutboxDropped > 0 {
		outbox += fmt.Sprintf(", %d dropped (the cloud lacks that history)", h.Health.OutboxDropped)
	}
	fmt.Fprintf(w, "outbox    %s\n", outbox)
	if len(h.Printers) == 0 {
		fmt.Fprintln(w, "printers  none")
		return
	}
	fmt.Fprintln(w, "\nprinters")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tSTATE\tQUEUE\tSINCE\tURL")
	for _, p := range h.Printers {
		state := p.State
		if p.FailoverTo != "" {
			state += " → " + p.FailoverTo
		}
		since := "-"
		if !p.Since.IsZero() {
			since = p.Since.Local().Format("2006-01-02 15:04:05")
		}
		url := p.URL
		if p.RawPort != "" {
			url += "  (POS raw port " + p.RawPort + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\n", p.Name, state, p.Queue, since, url)
	}
	tw.Flush()
}

// Reload shows a reload's changes, one line each.
func Reload(w io.Writer, res api.ReloadResult) {
	fmt.Fprintf(w, "reloaded %s\n", res.Config)
	line := func(what string, names []string) {
		if len(names) > 0 {
			fmt.Fprintf(w, "  %-8s %s\n", what+":", strings.Join(names, ", "))
		}
	}
	line("added", res.Added)
	line("changed", res.Changed)
	line("removed", res.Removed)
	if len(res.Added)+len(res.Changed)+len(res.Removed) == 0 {
		fmt.Fprintln(w, "  no printer changed")
	}
	for _, n := range res.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	if len(res.RestartNeeded) > 0 {
		fmt.Fprintf(w, "  not applied until the agent restarts: %s\n", strings.Join(res.RestartNeeded, ", "))
	}
}

// Tasks lists tasks (oldest first, as the API lists them) newest first,
// one row each: task_no, state and reason, printer (and where it went on
// failover), origin, attempts and when it was accepted.
func Tasks(w io.Writer, last []apiclient.Task) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK_NO\tSTATE\tPRINTER\tORIGIN\tATTEMPTS\tACCEPTED")
	for i := len(last) - 1; i >= 0; i-- {
		t := last[i]
		st := t.State
		if t.Reason != "" {
			st += " " + t.Reason
		}
		pr := t.Printer
		if t.Target != "" && t.Target != t.Printer {
			pr += " → " + t.Target
		}
		at := "-"
		if a := t.Accepted(); !a.IsZero() {
			at = a.Local().Format("2006-01-02 15:04:05")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", t.TaskNo, st, pr, t.Origin, t.Attempts, at)
	}
	tw.Flush()
}

// NextSteps tells the technician how to get from here to the first
// ticket: start, pair, the page and its PIN.
// Its commands are written for sh, the shell install ran in.
func NextSteps(w io.Writer, sh Shell, path string, cfg *config.Config, service bool) {
	url := "http://127.0.0.1:8631/"
	if cfg != nil {
		url = apiclient.URL(cfg) + "/"
	}
	cfgArg := ""
	if path != config.DefaultConfigPath() {
		cfgArg = " --config " + path
	}
	fmt.Fprintln(w, "\nNext steps:")
	n := 1
	step := func(format string, args ...any) {
		fmt.Fprintf(w, "  %d. "+format+"\n", append([]any{n}, args...)...)
		n++
	}
	if cfg == nil || len(cfg.Printers) == 0 {
		step("add a printer: on the manager page's Printers tab (scan, or Add a printer by address, which tests it first), or in %s (see `printgate printers --scan 192.168.1.0/24`)", path)
	}
	if service {
		step("start the service: %s", sh.Admin("printgate start"+cfgArg))
	} else {
		step("run the agent: printgate run --config %s", path)
	}
	step("pair with the cloud: set [cloud] in %s, then %s", path, sh.AsService("printgate pair"+cfgArg))
	step("open the manager page on this PC: %s", url)
	step("set the page's PIN: %s, or from this PC's browser on the page", sh.Admin("printgate pin set"+cfgArg))
	if service {
		step("check everything: %s", sh.Admin("printgate status"+cfgArg))
	}
}

// Left says how long a pairing code stays valid, in whole minutes: the
// progress line changes once a minute, not at every poll.
func Left(left time.Duration) string {
	if left < time.Minute {
		return "less than a minute"
	}
	return fmt.Sprintf("%dm", int(left/time.Minute))
}

// PrinterNames lists the printers of cfg for a message ("k, bar").
func PrinterNames(cfg *config.Config) string {
	names := make([]string, 0, len(cfg.Printers))
	for _, p := range cfg.Printers {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}

// Because is why a task is in its state, to follow the state: " (REASON):
// message", either part left out when empty.
func Because(t apiclient.Task) string {
	s := ""
	if t.Reason != "" {
		s += " (" + t.Reason + ")"
	}
	if t.Message != "" {
		s += ": " + t.Message
	}
	return s
}

// OrDash is s, or "-" for nothing.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
