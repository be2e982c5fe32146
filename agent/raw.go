package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"printgate/agent/api"
	"printgate/agent/config"
	"printgate/agent/rawport"
	"printgate/drivers/escpos"
	"printgate/spool"
)

// The raw ports (PROTOCOL.md §3 "Raw port"): per printer, an optional listener that takes
// print streams as a port-9100 printer does (package rawport), so a POS that
// cannot be changed prints through the spool, the lanes and the page.

// MaxRawConns bounds the connections open on all raw ports together; each
// port also has its own bound (rawport.DefaultMaxConns). Over either, a
// port stops accepting and new connections wait in the listen backlog:
// the bounds hold memory in check, and a lunch rush of write-and-close
// POS clients never reaches them.
const MaxRawConns = 128

// rawPorts holds the open raw port of each printer that has one.
type rawPorts struct {
	mu    sync.Mutex
	ports map[string]*rawPort // by printer name
	limit *rawport.Limiter
	// seq numbers each printer's raw jobs for their task_no, from 1 at
	// start; the time in the task_no keeps numbers of different runs apart.
	seq map[string]uint64
	// closed is set by CloseRawPorts: a reload still in flight then opens
	// nothing more.
	closed bool
}

// init marks the ports serving: from now on reloads open and close them.
// r.mu is held.
func (r *rawPorts) init() {
	if r.ports == nil {
		r.ports = map[string]*rawPort{}
	}
	if r.seq == nil {
		r.seq = map[string]uint64{}
	}
	if r.limit == nil {
		r.limit = rawport.NewLimiter(MaxRawConns)
	}
}

// rawPort is one open port and the settings it was opened with, so a
// reload can tell whether it must be reopened.
type rawPort struct {
	port *rawport.Port
	pc   config.Printer
}

// rawSink is what the ports hand jobs to: the agent, under a name that
// keeps rawport.Sink's Accept apart from the agent's own methods.
type rawSink struct{ a *Agent }

var _ rawport.Sink = rawSink{}

// OpenRawPorts opens the raw port of every printer that has raw_listen. It
// is called once the agent is Ready (serve only after restore); a port that
// cannot be opened is an error, as the listen address's would be.
func (a *Agent) OpenRawPorts() error {
	a.raw.mu.Lock()
	a.raw.init()
	a.raw.mu.Unlock()
	cfg := a.live.Load()
	for i := range cfg.Printers {
		pc := cfg.Printers[i]
		if pc.RawListen == "" {
			continue
		}
		if err := a.openRawPort(pc); err != nil {
			a.CloseRawPorts()
			return err
		}
	}
	return nil
}

// openRawPort opens pc's raw port and records it.
func (a *Agent) openRawPort(pc config.Printer) error {
	return a.openRawPortOn(pc, nil)
}

// openRawPortOn opens pc's raw port on ln, the listener of the port it
// replaces (rawport.Port.CloseKeep), or on a new one when ln is nil, and
// records it.
func (a *Agent) openRawPortOn(pc config.Printer, ln net.Listener) error {
	closeLn := func() {
		if ln != nil {
			ln.Close()
		}
	}
	a.raw.mu.Lock()
	if a.raw.closed {
		a.raw.mu.Unlock()
		closeLn()
		return fmt.Errorf("open the raw port of printer %s: the agent is stopping", pc.Name)
	}
	a.raw.init()
	limit := a.raw.limit
	a.raw.mu.Unlock()
	recent, err := a.recentRawJobs(pc.Name, pc.RawDuplicateWindow)
	if err != nil {
		// Only the duplicate marking of a resend right after a restart
		// depends on it: open the port anyway.
		a.log.Warn("raw port: recent jobs unreadable; a POS resend right after this start would not be marked POSSIBLE DUPLICATE", "printer", pc.Name, "err", err)
	}
	name := pc.Name
	var status func() rawport.PrinterStatus
	if pc.RawStatus == config.RawStatusPrinter {
		status = func() rawport.PrinterStatus { return a.rawPrinterStatus(name) }
	}
	o := rawport.Options{
		NotReady:         func(err error) { a.rawNotReady(name, err) },
		Status:           status,
		Recent:           recent,
		IdleGap:          pc.RawIdleGap,
		DupWindow:        rawDupWindow(pc.RawDuplicateWindow),
		FirstByteTimeout: pc.RawFirstByteTimeout,
		MaxPerAddress:    pc.RawMaxPerAddress,
		Allow:            pc.RawAllow,
		MaxJobBytes:      a.spool.MaxTaskBytes(),
		Decode:           pc.Profile.DecodeOptions(),
		Limit:            limit,
		Now:              a.opts.Clock.Now,
		// rawport names the printer on each line itself: naming it here
		// too put "printer" twice in a JSON line.
		Logger: a.log.With("component", "raw"),
	}
	var p *rawport.Port
	if ln != nil {
		p, err = rawport.Serve(ln, pc.Name, rawSink{a}, o)
	} else {
		p, err = rawport.Listen(pc.RawListen, pc.Name, rawSink{a}, o)
	}
	if err != nil {
		return fmt.Errorf("open the raw port of printer %s on %s (its raw_listen): %w", pc.Name, pc.RawListen, err)
	}
	a.raw.mu.Lock()
	if a.raw.closed {
		// CloseRawPorts ran while this one opened.
		a.raw.mu.Unlock()
		p.Close()
		return fmt.Errorf("open the raw port of printer %s: the agent is stopping", pc.Name)
	}
	a.raw.ports[pc.Name] = &rawPort{port: p, pc: pc}
	a.raw.mu.Unlock()
	allow := "any address"
	if len(pc.RawAllow) > 0 {
		allow = fmt.Sprint(pc.RawAllow)
	}
	a.log.Info("raw port listening", "printer", pc.Name, "addr", p.Addr().String(), "idle_gap", pc.RawIdleGap, "duplicate_window", pc.RawDuplicateWindow, "status", pc.RawStatus,
		"first_byte_timeout", pc.RawFirstByteTimeout, "max_per_address", pc.RawMaxPerAddress, "allow", allow)
	return nil
}

// rawPrinterStatus is the state of printer as its lane last read it, for
// the status answers of a raw port with raw_status = "printer". A printer
// not read yet (or gone) is offline: the agent has not reached it.
func (a *Agent) rawPrinterStatus(printer string) rawport.PrinterStatus {
	l := a.lane(printer)
	if l == nil {
		return rawport.PrinterStatus{Offline: true}
	}
	switch escpos.PrinterState(l.info().State) {
	case escpos.StateReady, escpos.StateBusy:
		return rawport.PrinterStatus{}
	case escpos.StatePaperOut:
		return rawport.PrinterStatus{PaperOut: true}
	case escpos.StateCoverOpen:
		return rawport.PrinterStatus{CoverOpen: true}
	case escpos.StateError:
		return rawport.PrinterStatus{Error: true}
	}
	return rawport.PrinterStatus{Offline: true}
}

// recentRawJobs lists printer's raw jobs taken within window (by this run
// or the one before it): an agent killed after storing a job and before
// closing its connection restarts within seconds, and the POS's resend of
// that job must still be marked POSSIBLE DUPLICATE.
func (a *Agent) recentRawJobs(printer string, window time.Duration) ([]rawport.Recent, error) {
	pg, err := a.spool.List(spool.ListOptions{Printer: printer, Desc: true, Limit: 64})
	if err != nil {
		return nil, fmt.Errorf("list recent tasks of %s: %w", printer, err)
	}
	now := a.opts.Clock.Now()
	var out []rawport.Recent
	for _, t := range pg.Tasks {
		if now.Sub(t.AcceptedAt) >= window {
			break // newest first: the rest are older
		}
		if t.Origin != spool.OriginRaw {
			continue
		}
		var r rawport.Recent
		if b, err := hex.DecodeString(t.SHA256); err == nil && len(b) == len(r.SHA256) {
			copy(r.SHA256[:], b)
			r.At = t.AcceptedAt
			out = append(out, r)
		}
	}
	return out, nil
}

// CloseRawPorts closes every raw port after its drain (rawport.Port.Close):
// every job sent by then that ends on a command boundary is taken, and a
// job that ends inside a command is dropped and reported (Refused).
func (a *Agent) CloseRawPorts() {
	a.raw.mu.Lock()
	ports := a.raw.ports
	a.raw.ports, a.raw.closed = nil, true
	a.raw.mu.Unlock()
	for _, rp := range ports {
		rp.port.Close()
	}
}

// RawPortAddr returns the address printer's raw port listens on, if it has
// one open (for tests and the page).
func (a *Agent) RawPortAddr(printer string) (string, bool) {
	a.raw.mu.Lock()
	defer a.raw.mu.Unlock()
	rp, ok := a.raw.ports[printer]
	if !ok {
		return "", false
	}
	return rp.port.Addr().String(), true
}

// rawPortStats is printer's raw port address and its job counts, for the
// page; empty when it has no port open.
func (a *Agent) rawPortStats(printer string) (addr string, jobs, refused uint64) {
	a.raw.mu.Lock()
	rp, ok := a.raw.ports[printer]
	a.raw.mu.Unlock()
	if !ok {
		return "", 0, 0
	}
	st := rp.port.Stats()
	return rp.port.Addr().String(), st.Jobs, st.Refused + st.Rejected
}

// syncRawPorts makes the open raw ports those of cfg after a reload: ports
// of removed printers, or whose settings changed, close; new ones open. It
// returns a note per port that could not be opened. Only a port whose
// settings changed is reopened, so a POS printing to an unchanged one never
// sees a reset.
func (a *Agent) syncRawPorts(cfg *config.Config) []string {
	a.raw.mu.Lock()
	if a.raw.ports == nil {
		// Not serving yet (OpenRawPorts opens them) or stopping.
		a.raw.mu.Unlock()
		return nil
	}
	want := map[string]config.Printer{}
	for _, pc := range cfg.Printers {
		if pc.RawListen != "" {
			want[pc.Name] = pc
		}
	}
	var closing []*rawport.Port
	var opening []config.Printer
	// A port whose settings changed on the same address hands its
	// listener to its successor: a write-and-close POS that connected
	// during the reload waits in the backlog instead of being reset with
	// a ticket it believes printed.
	reopening := map[string]*rawport.Port{}
	for name, rp := range a.raw.ports {
		pc, keep := want[name]
		if keep && sameRawPort(rp.pc, pc) {
			delete(want, name)
			continue
		}
		if keep && pc.RawListen == rp.pc.RawListen {
			reopening[name] = rp.port
		} else {
			closing = append(closing, rp.port)
		}
		delete(a.raw.ports, name)
	}
	for _, pc := range want {
		opening = append(opening, pc)
	}
	a.raw.mu.Unlock()
	for _, p := range closing {
		p.Close()
	}
	var notes []string
	for _, pc := range opening {
		var ln net.Listener
		if old, ok := reopening[pc.Name]; ok {
			var err error
			if ln, err = old.CloseKeep(); err != nil {
				a.log.Warn("reload: the raw port's listener could not be kept; it is opened again, and a POS connecting in between sees a reset", "printer", pc.Name, "err", err)
			}
		}
		if err := a.openRawPortOn(pc, ln); err != nil {
			a.log.Error("reload: a raw port could not be opened; POS jobs sent to it are refused by the network until it is fixed", "printer", pc.Name, "err", err)
			notes = append(notes, fmt.Sprintf("%s: raw port not open: %v", pc.Name, err))
		}
	}
	return notes
}

// rawDupWindow is the raw port's duplicate window for the config's: 0 is
// off there, where rawport's zero means its default, so off goes as a
// negative window, within which no job ever falls.
func rawDupWindow(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// sameRawPort reports whether a port opened for x serves y unchanged.
func sameRawPort(x, y config.Printer) bool {
	return x.RawListen == y.RawListen && x.RawIdleGap == y.RawIdleGap && x.RawDuplicateWindow == y.RawDuplicateWindow &&
		x.RawStatus == y.RawStatus && x.Profile.DecodeOptions() == y.Profile.DecodeOptions() &&
		x.RawFirstByteTimeout == y.RawFirstByteTimeout && x.RawMaxPerAddress == y.RawMaxPerAddress && slices.Equal(x.RawAllow, y.RawAllow)
}

// Accept stores a raw job as a task of origin raw, task_no
// RAW_<printer>_<yyyymmdd-hhmmss>_<seq>-<random>, fsync'd before it
// returns. The random part is what no other door can predict: a cloud sees
// every task_no in the events, and without it could claim the next
// seconds' numbers first and leave a POS's raw jobs no free one. A job
// over the raw door's rate waits here for its turn, on its connection.
func (s rawSink) Accept(ctx context.Context, j rawport.Job) (string, error) {
	a := s.a
	if err := a.doors.wait(ctx, spool.OriginRaw); err != nil {
		return "", err
	}
	stamp := j.Started.Local().Format("20060102-150405")
	for range 100 {
		a.raw.mu.Lock()
		if a.raw.seq == nil {
			a.raw.seq = map[string]uint64{}
		}
		a.raw.seq[j.Printer]++
		n := a.raw.seq[j.Printer]
		a.raw.mu.Unlock()
		taskNo := fmt.Sprintf("RAW_%s_%s_%d-%s", j.Printer, stamp, n, rawNonce())
		t, dup, err := a.Submit(ctx, spool.NewTask{
			TaskNo: taskNo, Printer: j.Printer, Origin: spool.OriginRaw, Payload: j.Data,
			PossibleDuplicate: j.Duplicate, Truncated: j.Truncated,
			Queued: j.InOrder,
		})
		if dup || errors.Is(err, api.ErrTaskNoTaken) {
			// Another task has this number (it cannot happen by chance):
			// take the next one, never drop the job.
			continue
		}
		if err != nil {
			return "", err
		}
		return t.TaskNo, nil
	}
	return "", fmt.Errorf("no free task_no for a raw job of %s after 100 tries", j.Printer)
}

// Ready says whether a raw port can take a job now: not while the agent
// cannot take work, the spool or the raw door's quota has no room for the
// largest job, or the disk is down to keep_free. Meanwhile the port reads
// no job (its POS connections wait), and rawNotReady tells the manager.
func (s rawSink) Ready(printer string) error {
	return s.ready(printer)
}

// rawNotReady is a raw port's Options.NotReady: a WARN, a page alert and
// /healthz degraded (rawProblem) while the port waits for the spool.
func (a *Agent) rawNotReady(printer string, err error) {
	why := ""
	if err != nil {
		why = err.Error()
		// A peer that fills the spool flips this state: rate-limited.
		a.doors.warns.Warn(a.log, "RAW PORT NOT ACCEPTING: the spool cannot take a job; POS connections wait unread in the network queue and print once it can (a POS that gives up shows its printer error); nothing they sent was refused",
			"printer", printer, "err", err)
	} else {
		a.doors.warns.Log(a.log, slog.LevelInfo, "raw port accepting again", "printer", printer)
	}
	a.observe(Event{Printer: printer, RawWaiting: true, RawWaitingWhy: why})
	a.observe(Event{Health: true})
}

// rawProblem is /healthz's reason while a raw port waits for the spool,
// or "".
func (a *Agent) rawProblem() string {
	a.raw.mu.Lock()
	defer a.raw.mu.Unlock()
	names := make([]string, 0, len(a.raw.ports))
	for name := range a.raw.ports {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := a.raw.ports[name].port.NotAccepting(); err != nil {
			return fmt.Sprintf("the raw port of printer %s takes no new job: %v; POS connections wait in the network queue until there is room. Free disk space (keep_free), or raise max_size or quota_raw", name, err)
		}
	}
	return ""
}

// ready is Ready's judgment.
func (s rawSink) ready(printer string) error {
	a := s.a
	if err := a.available(); err != nil {
		return err
	}
	if a.lane(printer) == nil {
		return fmt.Errorf("%w: %q", api.ErrUnknownPrinter, printer)
	}
	// Room for the largest job, decided as Accept decides it (on the
	// spool's file): one read and then refused would be a ticket the POS
	// believes printed.
	need := spool.Charge(a.spool.MaxTaskBytes())
	ok, err := a.spool.Room(need)
	if err == nil && !ok {
		// Printed tickets of any door make room, as they do for the
		// cap: another door's share of the file must not keep this one
		// waiting while it is under its own quota.
		var n int
		if n, err = a.spool.MakeFileRoom(need); n > 0 {
			a.noteReclaimed()
		}
		if err == nil {
			ok, err = a.spool.Room(need)
		}
	}
	if err != nil {
		return fmt.Errorf("read spool room: %w", err)
	} else if !ok {
		u, _ := a.spool.Usage()
		return fmt.Errorf("%w: the spool has no room for another job of the largest size (%d%% full)", spool.ErrFull, u.Percent())
	}
	// The raw door's quota, likewise.
	ou, err := a.spool.Origin(spool.OriginRaw)
	if err != nil {
		return fmt.Errorf("read the raw door's spool use: %w", err)
	}
	if ou.Full(need) {
		// Printed raw jobs make room first (spool reclaim).
		if n, err := a.spool.MakeRoom(spool.OriginRaw, need); err != nil {
			return fmt.Errorf("make room for a raw job: %w", err)
		} else if n > 0 {
			a.noteReclaimed()
			if ou, err = a.spool.Origin(spool.OriginRaw); err != nil {
				return fmt.Errorf("read the raw door's spool use: %w", err)
			}
		}
	}
	if ou.Full(need) {
		return a.doorRefused(&spool.QuotaError{Origin: spool.OriginRaw, Used: ou.Used, Quota: ou.Quota, Need: need})
	}
	if a.spool.LowSpace() {
		return fmt.Errorf("%w: the disk holding the spool is down to [spool] keep_free", spool.ErrFull)
	}
	return nil
}

// Refused logs a job a raw port read and could not take, and raises the
// page's alert: the POS believes it printed.
func (s rawSink) Refused(printer, remote string, size int, err error) {
	a := s.a
	detail, reason := err.Error(), "error"
	switch {
	case errors.Is(err, rawport.ErrTooLarge):
		detail, reason = fmt.Sprintf("over the %d byte job limit", a.spool.MaxTaskBytes()), "too_large"
	case errors.Is(err, spool.ErrFull):
		detail, reason = "the spool is full", "spool_full"
	case errors.Is(err, rawport.ErrClosing):
		detail, reason = "the port closed (agent stop or reload) before the job was whole", "closing"
	}
	a.m.IncRawRefused(printer, reason)
	a.doors.warns.Log(a.log, slog.LevelError, "RAW JOB REFUSED: a job a POS sent to the printer port did not print", "printer", printer, "remote", remote, "size", size, "reason", detail, "err", err)
	a.observe(Event{Printer: printer, RawRefused: detail})
}

// rawNonce is the random part of a raw task_no: 8 hex digits from the
// system's secure source, so the numbers a raw job gets cannot be told in
// advance by any peer.
func rawNonce() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}
