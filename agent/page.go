package agent

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"

	"printgate/agent/localapi"
	"printgate/agent/logring"
	"printgate/agent/web"
	"printgate/drivers"
	"printgate/drivers/escpos"
	"printgate/spool"
	"printgate/sync/link"
)

// The manager page's backend (issue 11): the page's actions and views on
// top of the intake API the agent already serves.
var _ web.Backend = (*Agent)(nil)

// available says why the agent cannot take work now, or nil: intake and the
// manager's actions are refused while the spool is being restored and once
// the core has stopped, since no lane would print what they queue.
func (a *Agent) available() error {
	if a.Failed() != nil {
		return fmt.Errorf("%w: its core has stopped on a failure (see the agent's log)", localapi.ErrUnavailable)
	}
	select {
	case <-a.started:
		return nil
	default:
		return fmt.Errorf("%w: the agent is still restoring its spool", localapi.ErrUnavailable)
	}
}

// Retry prints again a task that ended without paper. A HELD task is
// re-queued in place by the lane holding it (HELD → QUEUED, marked
// POSSIBLE DUPLICATE, on printer when one is named), so it prints once
// however many retries race for it; a TIMED_OUT or FAILED task becomes a
// new version, marked POSSIBLE DUPLICATE when bytes of it may have left.
func (a *Agent) Retry(ctx context.Context, taskNo, printer string) (*spool.Task, error) {
	if printer != "" {
		if a.lane(printer) == nil {
			return nil, fmt.Errorf("retry %s: %w: %q (configured: %v)", taskNo, localapi.ErrUnknownPrinter, printer, a.laneNames())
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
				return nil, fmt.Errorf("retry %s: %w: its printer %q is no longer configured; choose one of %v", taskNo, localapi.ErrUnknownPrinter, printer, a.laneNames())
			}
		}
		nt, err := a.newVersion(ctx, t, printer, sentBefore(t))
		if err != nil {
			return nil, fmt.Errorf("retry %s: %w", taskNo, err)
		}
		return nt, nil
	}
	return nil, fmt.Errorf("%w: task %s is %s; only a TIMED_OUT, FAILED or HELD task can be retried", localapi.ErrConflict, taskNo, t.State)
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
		return nil, fmt.Errorf("%w: task %s is not held by any lane", localapi.ErrConflict, taskNo)
	}
	select {
	case r := <-reply:
		return r.task, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("retry %s: %w", taskNo, ctx.Err())
	}
}

// PrinterDetails describes every configured printer, in config order.
func (a *Agent) PrinterDetails() []web.PrinterDetail {
	_, lanes := a.laneList()
	out := make([]web.PrinterDetail, 0, len(lanes))
	for _, l := range lanes {
		l.infoMu.Lock()
		d := web.PrinterDetail{PrinterInfo: l.snap, LastTask: l.lastTask, LastAt: l.lastAt}
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

// TestPrint queues a short test ticket on printer: its name, the time, its
// profile, a QR code, and a line of Chinese when the profile can print it.
func (a *Agent) TestPrint(ctx context.Context, printer string) (*spool.Task, error) {
	l := a.lane(printer)
	if l == nil {
		return nil, fmt.Errorf("test print: %w: %q (configured: %v)", localapi.ErrUnknownPrinter, printer, a.laneNames())
	}
	now := a.opts.Clock.Now()
	doc, err := TestTicket{Printer: printer, Profile: l.pc.Profile, At: now}.Document()
	if err != nil {
		return nil, fmt.Errorf("test print on %s: %w", printer, err)
	}
	t, _, err := a.Submit(ctx, spool.NewTask{
		TaskNo: fmt.Sprintf("TEST_%s_%d", printer, now.UnixNano()), Printer: printer,
		Priority: spool.PriorityUrgent, Origin: spool.OriginManager, Document: doc,
	})
	if err != nil {
		return nil, fmt.Errorf("test print on %s: %w", printer, err)
	}
	return t, nil
}

// Discover lists serial ports and USB printers on this PC. One kind failing
// does not hide the other's results; the error says what failed, and is
// returned alone only when both did.
func (a *Agent) Discover() ([]drivers.Found, error) {
	serial, serr := drivers.DiscoverSerial()
	usb, uerr := drivers.DiscoverUSB()
	found := append(serial, usb...)
	if serr != nil {
		serr = fmt.Errorf("serial ports: %w", serr)
	}
	if uerr != nil {
		uerr = fmt.Errorf("USB printers: %w", uerr)
	}
	return found, errors.Join(serr, uerr)
}

// Scan looks for port-9100 printers on cidr, or on this PC's own IPv4
// networks when cidr is "", each cut down to the largest network ScanTCP
// accepts around the PC's address.
func (a *Agent) Scan(ctx context.Context, cidr string, progress func(done, total int)) ([]drivers.Found, error) {
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
		f, err := drivers.ScanTCP(ctx, n, a.scanPort, opts)
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

// AttachLink gives the agent the cloud link, for the page's Link, Pairing
// and live view; runService calls it once the link is built. Calling it
// again replaces the link.
func (a *Agent) AttachLink(l *link.Link) {
	a.link.Store(l)
	if l != nil {
		l.OnStateChange(func(state string) {
			a.hub.publish(web.Change{Kind: "link", State: state})
		})
	}
	a.hub.publish(web.Change{Kind: "link"})
}

// Link describes the cloud link for the dashboard.
func (a *Agent) Link() web.LinkInfo {
	if a.cfg.Cloud == nil {
		return web.LinkInfo{State: "disabled"}
	}
	info := web.LinkInfo{State: link.StateOffline}
	if l := a.link.Load(); l != nil {
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

// Subscribe delivers a web.Change on each task transition, printer state
// change, failover switch, link state change and health change, until ctx
// ends. Sends never wait: a subscriber whose buffer is full misses changes.
func (a *Agent) Subscribe(ctx context.Context) <-chan web.Change {
	return a.hub.subscribe(ctx)
}

// Tail streams the agent's recent and new log lines, as support's remote
// tail does; without Options.Ring no lines are kept and it says so.
func (a *Agent) Tail(ctx context.Context, o logring.TailOptions, send func(lines []string) error) error {
	if a.opts.Ring == nil {
		return errors.New("this agent keeps no log lines in memory (no log ring); read its log file instead")
	}
	return a.opts.Ring.Tail(ctx, o, send)
}

// Preview draws t as it looks on paper on the printer it prints on.
func (a *Agent) Preview(t *spool.Task) (template.HTML, error) {
	// The running lanes, not the start-up config: a reload may have
	// changed the printer's profile.
	l := a.lane(t.Lane())
	if l == nil {
		if l = a.lane(t.Printer); l == nil {
			return "", fmt.Errorf("preview %s: %w: %q is no longer configured", t.TaskNo, localapi.ErrUnknownPrinter, t.Lane())
		}
	}
	return previewHTML(t, l.pc.Profile)
}

// previewHTML draws t for a printer of profile p with the banners its
// printer path prints: a document through the same layout as Render, a raw
// payload (after the banner bytes the lane puts before it) through the
// stream decoder the emulator uses, so the page shows what the paper gets.
func previewHTML(t *spool.Task, p escpos.Profile) (template.HTML, error) {
	opts := renderOptions(t)
	if len(t.Document) > 0 {
		doc, err := escpos.ParseDocument(t.Document)
		if err != nil {
			return "", fmt.Errorf("preview %s: %w", t.TaskNo, err)
		}
		out, err := escpos.PreviewHTML(doc, p, opts)
		if err != nil {
			return "", fmt.Errorf("preview %s: %w", t.TaskNo, err)
		}
		return out, nil
	}
	if len(t.Payload) == 0 {
		return template.HTML(`<p class="paper-missing">The ticket's content is no longer kept.</p>`), nil
	}
	stream, err := rawJob(t.Payload, p, opts)
	if err != nil {
		return "", fmt.Errorf("preview %s: %w", t.TaskNo, err)
	}
	caption := fmt.Sprintf(`<p class="paper-caption">raw ESC/POS payload, %d bytes</p>`, len(t.Payload))
	return template.HTML(caption) + escpos.PreviewStreamHTML(stream, p.DecodeOptions()), nil
}

// maxSubscribers bounds the live views open at once; one more gets a
// closed channel (its page reconnects later).
const maxSubscribers = 64

// subscriberBuffer is how many changes a live view may lag behind before
// it misses some.
const subscriberBuffer = 64

// hub fans changes out to the page's live views without ever making the
// agent wait on one.
type hub struct {
	mu   sync.Mutex
	subs map[chan web.Change]struct{}
	// dropped counts changes a full subscriber missed, for tests.
	dropped atomic.Int64
}

func (h *hub) subscribe(ctx context.Context) <-chan web.Change {
	ch := make(chan web.Change, subscriberBuffer)
	h.mu.Lock()
	if ctx.Err() != nil || len(h.subs) >= maxSubscribers {
		h.mu.Unlock()
		close(ch)
		return ch
	}
	if h.subs == nil {
		h.subs = map[chan web.Change]struct{}{}
	}
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	context.AfterFunc(ctx, func() {
		h.mu.Lock()
		delete(h.subs, ch)
		close(ch)
		h.mu.Unlock()
	})
	return ch
}

// publish offers c to every subscriber; a full one misses it.
func (h *hub) publish(c web.Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- c:
		default:
			h.dropped.Add(1)
		}
	}
}

// changeOf is the live view's notice of an agent event; ok is false for
// events the page does not show (a spool write being retried).
func changeOf(e Event) (web.Change, bool) {
	switch {
	case e.Err != nil:
		return web.Change{}, false
	case e.Task != nil:
		return web.Change{Kind: "task", Printer: e.Printer, TaskNo: e.Task.TaskNo, State: string(e.Task.State)}, true
	case e.Switch:
		return web.Change{Kind: "printer", Printer: e.Printer}, true
	case e.State != "":
		return web.Change{Kind: "printer", Printer: e.Printer, State: e.State}, true
	}
	return web.Change{}, false
}
