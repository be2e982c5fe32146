package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"printgate/agent/api"
	"printgate/agent/logring"
	"printgate/drivers/escpos"
	"printgate/spool"
	"printgate/sync/link"
)

// The manager page's actions and views on top of the intake API the agent
// already serves; agent/daemon adds the LAN scan and serves
// them as the page's web.Backend.

// available says why the agent cannot take work now, or nil: intake and the
// manager's actions are refused while the spool is being restored and once
// the core has stopped, since no lane would print what they queue.
func (a *Agent) available() error {
	if a.Failed() != nil {
		return fmt.Errorf("%w: its core has stopped on a failure (see the agent's log)", api.ErrUnavailable)
	}
	select {
	case <-a.started:
		return nil
	default:
		return fmt.Errorf("%w: the agent is still restoring its spool", api.ErrUnavailable)
	}
}

// Retry prints again a task that ended without paper. A HELD task is
// re-queued in place by the lane holding it (HELD → QUEUED, marked
// POSSIBLE DUPLICATE, on printer when one is named), so it prints once
// however many retries race for it; a TIMED_OUT or FAILED task becomes a
// new version, marked POSSIBLE DUPLICATE when bytes of it may have left.
// That new version is made only while no earlier version of the task is
// live or printed: a second click is refused with *api.RetryExists naming
// the version that will print or did (409), so a retry prints once
// however often it is asked for.
func (a *Agent) Retry(ctx context.Context, taskNo, printer string) (*spool.Task, error) {
	if printer != "" {
		if a.lane(printer) == nil {
			return nil, fmt.Errorf("retry %s: %w: %q (configured: %v)", taskNo, api.ErrUnknownPrinter, printer, a.laneNames())
		}
	}
	if err := a.available(); err != nil {
		return nil, fmt.Errorf("retry %s: %w", taskNo, err)
	}
	t, err := a.spool.Get(taskNo)
	if err != nil {
		return nil, fmt.Errorf("retry %s: %w", taskNo, err)
	}
	switch t.State {
	case spool.StateHeld:
		return a.retryHeld(ctx, taskNo, printer)
	case spool.StateTimedOut, spool.StateFailed:
		if printer == "" {
			printer = t.Printer
			if a.lane(printer) == nil {
				return nil, fmt.Errorf("retry %s: %w: its printer %q is no longer configured; choose one of %v", taskNo, api.ErrUnknownPrinter, printer, a.laneNames())
			}
		}
		a.retryMu.Lock()
		defer a.retryMu.Unlock()
		if v := a.liveVersion(t); v != nil {
			return nil, fmt.Errorf("retry %s: %w", taskNo, &api.RetryExists{TaskNo: taskNo, Version: v.TaskNo, State: string(v.State)})
		}
		nt, err := a.newVersion(ctx, t, printer, sentBefore(t), spool.OriginManager)
		if err != nil {
			return nil, fmt.Errorf("retry %s: %w", taskNo, err)
		}
		return nt, nil
	}
	return nil, fmt.Errorf("%w: task %s is %s; only a TIMED_OUT, FAILED or HELD task can be retried", api.ErrConflict, taskNo, t.State)
}

// liveVersion returns a version of the ticket t failed to print that is
// still to print or has printed, or nil. The ticket is t's oldest ancestor
// reached through reprint_of while each ended without paper (TIMED_OUT or
// FAILED): a printed ancestor was a copy on paper, and a reprint of it a
// deliberate second one. Every version made from that ticket since (retries
// and reprints of it, or of those) counts, so retrying two siblings prints
// once too. Versions are made at the first free _vN, so the walk stops at
// the first task_no nobody used.
func (a *Agent) liveVersion(t *spool.Task) *spool.Task {
	root := t
	for i := 0; i < 100 && root.ReprintOf != ""; i++ {
		p, err := a.spool.Get(root.ReprintOf)
		if err != nil || (p.State != spool.StateTimedOut && p.State != spool.StateFailed) {
			break
		}
		root = p
	}
	ours := map[string]bool{root.TaskNo: true}
	next := root.TaskNo
	for i := 0; i < 100; i++ {
		next = nextVersion(next)
		v, err := a.spool.Get(next)
		if err != nil {
			return nil
		}
		if !ours[v.ReprintOf] {
			continue // the same name, made otherwise: not this ticket's
		}
		ours[v.TaskNo] = true
		if !v.State.Terminal() || v.State == spool.StatePrinted {
			return v
		}
	}
	return nil
}

// sentBefore reports whether t ever reached SENDING: job bytes may have
// left, so a new copy must say it may be a duplicate.
func sentBefore(t *spool.Task) bool {
	for _, e := range t.Timeline {
		if e.State == spool.StateSending {
			return true
		}
	}
	return t.Attempts > 0
}

// retryHeld asks the lane holding a HELD task to queue it again.
func (a *Agent) retryHeld(ctx context.Context, taskNo, printer string) (*spool.Task, error) {
	reply := make(chan retryResult, 1)
	if !a.toOwner(taskNo, msgRetry{taskNo: taskNo, printer: printer, reply: reply}) {
		return nil, fmt.Errorf("%w: task %s is not held by any lane", api.ErrConflict, taskNo)
	}
	select {
	case r := <-reply:
		return r.task, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("retry %s: %w", taskNo, ctx.Err())
	}
}

// PrinterDetails describes every configured printer, in config order.
func (a *Agent) PrinterDetails() []api.PrinterDetail {
	_, lanes := a.laneList()
	out := make([]api.PrinterDetail, 0, len(lanes))
	for _, l := range lanes {
		a.lastPrinted(l)
		l.infoMu.Lock()
		d := api.PrinterDetail{PrinterInfo: l.snap, LastTask: l.lastTask, LastAt: l.lastAt}
		l.infoMu.Unlock()
		d.Backup = l.pc.Backup
		d.Profile = l.pc.Profile.Name
		d.RawPort, d.RawJobs, d.RawRefused = a.rawPortStats(l.name)
		if c, ok := l.dev.(interface {
			Capabilities() (escpos.Capabilities, bool)
		}); ok {
			if caps, known := c.Capabilities(); known {
				d.Capabilities = capabilityPhrases(l.pc.Profile, caps)
				d.Model = strings.TrimSpace(strings.Join([]string{caps.Maker, caps.Model}, " "))
				if caps.Firmware != "" && d.Model != "" {
					d.Model += " (firmware " + caps.Firmware + ")"
				}
			}
		}
		out = append(out, d)
	}
	return out
}

// lastPrinted fills in l's last ticket from the spool, once per lane, when
// it has printed none since it started: a restart or a reload starts a new
// lane, and the page showed "Last ticket —" for a printer that had printed.
// The last is the newest PRINTED task this printer put on paper (its own,
// or one it printed as a backup), among the newest tasks of the printer.
func (a *Agent) lastPrinted(l *lane) {
	l.infoMu.Lock()
	ask := l.lastTask == "" && !l.lastRead
	l.lastRead = true
	l.infoMu.Unlock()
	if !ask {
		return
	}
	pg, err := a.spool.List(spool.ListOptions{Printer: l.name, Desc: true, Limit: 64})
	if err != nil {
		return // the page shows none, as before a first ticket
	}
	for _, t := range pg.Tasks {
		if t.State != spool.StatePrinted || t.Lane() != l.name {
			continue
		}
		l.infoMu.Lock()
		if l.lastTask == "" { // a ticket printed meanwhile is newer
			l.lastTask, l.lastAt = t.TaskNo, t.UpdatedAt
		}
		l.infoMu.Unlock()
		return
	}
}

// capabilityPhrases describes a probed printer: its paper and text from the
// profile, and what the probe found it answers.
func capabilityPhrases(p escpos.Profile, c escpos.Capabilities) []string {
	paper := fmt.Sprintf("%d dots", p.Dots)
	switch p.Dots {
	case 576:
		paper = "80 mm"
	case 384:
		paper = "58 mm"
	}
	out := []string{fmt.Sprintf("%s, %d columns", paper, p.Columns), p.Encoding}
	switch p.Cutter {
	case escpos.CutterFull:
		out = append(out, "cutter")
	case escpos.CutterPartialOnly:
		out = append(out, "partial cutter")
	case escpos.CutterNone:
		out = append(out, "no cutter")
	}
	if c.RealTime {
		out = append(out, "real-time status")
	}
	if c.TransmitStatus {
		out = append(out, "transmit status")
	}
	if c.ProcessID {
		out = append(out, "print confirmation")
	}
	if !c.RealTime && !c.TransmitStatus && !c.ProcessID {
		out = append(out, "one-way (no status)")
	}
	return out
}

// Link describes the cloud link for the dashboard.
func (a *Agent) Link() api.LinkInfo {
	if a.cfg.Cloud == nil {
		return api.LinkInfo{State: "disabled"}
	}
	info := api.LinkInfo{State: link.StateOffline}
	if l := a.attached(); l != nil {
		st := l.Stats()
		info.State, info.LastSync, info.LastError, info.Store = st.State, st.LastSync, st.LastError, st.Store
	}
	if st, err := a.spool.OutboxStats(); err == nil {
		info.Outbox = st.Depth
	} else if info.LastError == "" {
		info.LastError = "outbox unreadable: " + err.Error()
	}
	return info
}

// Tail streams the agent's recent and new log lines, as support's remote
// tail does; without Options.Ring no lines are kept and it says so.
func (a *Agent) Tail(ctx context.Context, o logring.TailOptions, send func(lines []string) error) error {
	if a.opts.Ring == nil {
		return errors.New("this agent keeps no log lines in memory (no log ring); read its log file instead")
	}
	return a.opts.Ring.Tail(ctx, o, send)
}
