package rawport

import (
	"context"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"printgate/internal/warnlimit"
)

// The raw port cannot be held hostage: a client that opens
// connections and sends nothing, or only padding and status queries, once
// kept every slot of the port for minutes, and a POS's next connection
// waited behind them. Three bounds stop it, none of which touches a
// connection that carries a job (docs/DESIGN.md, invariant 8): a connection is
// closed when it sends nothing to print in time (conn.noJobDeadline), one
// address may have only a few connections without a job at once
// (Options.MaxPerAddress), and an optional allow-list (Options.Allow)
// refuses every other address.

// admission is what the port does with a connection that arrived.
type admission int

const (
	admitRead   admission = iota // read it now
	admitWait                    // hold it unread until its address has room
	admitRefuse                  // reset it, unread: over every bound
)

// addrState is one client address's connections on a port.
type addrState struct {
	// idle counts the connections being read that carry no job (no
	// content); only these count against Options.MaxPerAddress. read
	// counts every connection being read, idle or with a job, against
	// Options.MaxReadPerAddress.
	idle, read int
	// waiting counts connections held unread until idle drops below the
	// bound. They are read in the order they came: each has a number
	// from nextWait, and the one numbered headWait goes next.
	waiting            int
	nextWait, headWait uint64
	// roomy is closed, and replaced, when idle drops or the head of the
	// waiting line moves.
	roomy chan struct{}
}

// addrs tracks the connections of a port by client address.
type addrs struct {
	max     int // Options.MaxPerAddress
	maxRead int // Options.MaxReadPerAddress
	// waitMax bounds the connections waiting from one address, and
	// waitTotal those waiting on the port. They hold no slot (see
	// acceptLoop), only a socket and a goroutine, so the bounds are
	// generous: a POS that fires a dozen write-and-close jobs at once
	// loses none, and a client that floods the port costs bounded sockets.
	waitMax, waitTotal int

	mu      sync.Mutex
	m       map[netip.Addr]*addrState
	waiting int // on the port
}

// newAddrs returns the per-address bookkeeping for o.
func newAddrs(o Options) addrs {
	return addrs{max: o.MaxPerAddress, maxRead: o.MaxReadPerAddress, waitMax: o.MaxConns, waitTotal: waitingPerPort * o.MaxConns}
}

// waitingPerPort is how many times MaxConns connections may wait for
// their address's room on one port.
const waitingPerPort = 4

func (a *addrs) state(ip netip.Addr) *addrState {
	if a.m == nil {
		a.m = map[netip.Addr]*addrState{}
	}
	st := a.m[ip]
	if st == nil {
		st = &addrState{roomy: make(chan struct{})}
		a.m[ip] = st
	}
	return st
}

// forget drops ip's entry once nothing of it is counted; a.mu is held.
func (a *addrs) forget(ip netip.Addr, st *addrState) {
	if st.idle == 0 && st.read == 0 && st.waiting == 0 {
		delete(a.m, ip)
	}
}

// reserve decides on a connection from ip that arrived and counts it:
// read while ip has fewer than max idle connections and fewer than maxRead
// read at all, else held while
// fewer than waitMax of ip and waitTotal of the port wait, else refused.
func (a *addrs) reserve(ip netip.Addr) admission {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.state(ip)
	switch {
	case st.room(a) && st.waiting == 0: // none of ip's waits before it
		st.idle++
		st.read++
		return admitRead
	case st.waiting < a.waitMax && a.waiting < a.waitTotal:
		st.waiting++
		a.waiting++
		return admitWait
	}
	a.forget(ip, st)
	return admitRefuse
}

// queue gives a connection reserve put to wait its number in ip's waiting
// line.
func (a *addrs) queue(ip netip.Addr) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.state(ip)
	n := st.nextWait
	st.nextWait++
	return n
}

// room reports whether st has room for one more connection to be read.
func (st *addrState) room(a *addrs) bool { return st.idle < a.max && st.read < a.maxRead }

// moved wakes the waiting connections of st; a.mu is held.
func (st *addrState) moved() {
	close(st.roomy)
	st.roomy = make(chan struct{})
}

// unreserve undoes reserve for a connection that was not served after all.
func (a *addrs) unreserve(ip netip.Addr, how admission) {
	switch how {
	case admitRead:
		a.leave(ip, true)
	case admitWait:
		a.mu.Lock()
		st := a.state(ip)
		st.waiting--
		a.waiting--
		a.forget(ip, st)
		a.mu.Unlock()
	}
}

// setIdle counts a connection of ip as idle (it has no job open) or no
// longer idle (it has content, or ended).
func (a *addrs) setIdle(ip netip.Addr, idle bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.state(ip)
	if idle {
		st.idle++
		return
	}
	st.idle--
	st.moved()
	a.forget(ip, st)
}

// leave uncounts a connection of ip that was read and ended; idle says it
// was counted idle.
func (a *addrs) leave(ip netip.Addr, idle bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.state(ip)
	if idle {
		st.idle--
	}
	st.read--
	st.moved()
	a.forget(ip, st)
}

// wait holds a connection reserve put to wait, numbered n by queue, until
// ip has room for it to be read and every connection that waited before it
// has gone on, then counts it idle; the caller calls next once it has its
// slots and its place in the port's line, so that ip's connections keep
// their order there. It reports false, uncounting it, when ctx ends or
// stop is closed first (the port closes: every waiting connection gives
// up, so none is left waiting for one that gave up). Once drain is closed
// (a stop's drain) ip's bound no longer holds it, only its order: the
// drain reads what it can of the jobs already sent.
func (a *addrs) wait(ctx context.Context, drain, stop <-chan struct{}, ip netip.Addr, n uint64) bool {
	for {
		draining := false
		select {
		case <-drain:
			draining = true
		default:
		}
		a.mu.Lock()
		st := a.state(ip)
		if (draining || st.room(a)) && st.headWait == n {
			st.idle++ // still waiting too until next: arrivals go behind it
			st.read++
			a.mu.Unlock()
			return true
		}
		roomy := st.roomy
		a.mu.Unlock()
		select {
		case <-roomy:
		case <-drain:
		case <-ctx.Done():
			a.unreserve(ip, admitWait)
			return false
		case <-stop:
			a.unreserve(ip, admitWait)
			return false
		}
	}
}

// next ends the wait of the connection wait let through, and lets the one
// behind it go on.
func (a *addrs) next(ip netip.Addr) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st := a.state(ip)
	st.waiting--
	a.waiting--
	st.headWait++
	st.moved()
	a.forget(ip, st)
}

// addrOf is the client address of a connection, the key of the
// per-address bound: IPv4 addresses mapped into IPv6 are the IPv4 address,
// so a dual-stack listener counts a POS once.
func addrOf(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(ta.IP)
		return ip.Unmap()
	}
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// allowed reports whether the allow-list lets ip in; an empty list lets
// every address in.
func allowed(list []netip.Prefix, ip netip.Addr) bool {
	if len(list) == 0 {
		return true
	}
	for _, p := range list {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Lines a client can provoke at will are rate-limited, so a flood of
// connections costs a bounded log (docs/DESIGN.md, invariant 10): the first few
// of each message in a minute are logged, the rest counted and summarised
// once the minute is over (internal/warnlimit, as at every door).
const (
	linesPerMinute = warnlimit.PerMinute
	lineWindow     = warnlimit.Window
)

// lineLimit rate-limits log lines by message, on the port's clock.
type lineLimit struct {
	now func() time.Time

	once sync.Once
	w    warnlimit.Limiter
}

// log writes msg at level unless linesPerMinute lines of msg were written
// in the current window; a window that ended with lines held back is
// summarised first.
func (l *lineLimit) log(log *slog.Logger, level slog.Level, msg string, args ...any) {
	l.once.Do(func() {
		l.w.Now = l.now
		if l.w.Now == nil { // a Port made by hand, in a test
			l.w.Now = time.Now
		}
	})
	l.w.Log(log, level, msg, args...)
}

// noJobLimit is how long the connection may carry no job: FirstByteTimeout
// until its first job, ConnIdle between jobs of a connection kept open.
func (c *conn) noJobLimit() time.Duration {
	if c.hadJob {
		return c.p.o.ConnIdle
	}
	return c.p.o.FirstByteTimeout
}

// noJobDeadline is when a connection with no content is closed: noJobLimit
// after idleSince, whatever it sent meanwhile that is not content (status
// queries, NUL, ESC @, mode settings: a client sending one NUL a second is
// closed in time). A command still arriving then may be a job's first (a
// logo sent slowly) and may finish while its bytes keep coming, IdleGap
// apart at most; the first command that completes after the limit leaves
// IdleGap for the job's first printable byte, and no more (grace), so a
// client cannot stretch the limit with one short command after another.
// A command pending is also bounded by MaxJobDuration, as a job is.
func (c *conn) noJobDeadline() time.Time {
	o := c.p.o
	d := c.idleSince.Add(c.noJobLimit())
	switch {
	case !c.grace.IsZero():
		d = c.grace
	case len(c.buf) > 0:
		d = later(d, c.lastRead.Add(o.IdleGap))
	}
	if len(c.buf) > 0 {
		d = earlier(d, c.opened.Add(o.MaxJobDuration))
	}
	return d
}

// noteNoJob follows a read at now, in which ran says commands completed:
// past the limit with no content, that starts the grace. It also keeps the
// port's count of the address's connections without a job current.
func (c *conn) noteNoJob(now time.Time, ran bool) {
	if !c.content && ran && c.grace.IsZero() && !now.Before(c.idleSince.Add(c.noJobLimit())) {
		c.grace = now.Add(c.p.o.IdleGap)
	}
	c.syncIdle()
}

// closeNoJob ends a connection that carried no job for its limit (see
// noJobDeadline). Nothing on it is a job, so nothing is lost; a command it
// was in the middle of is cut off with a reset, since its client is not
// done.
func (c *conn) closeNoJob(now time.Time) {
	c.p.idleClosed.Add(1)
	if c.hadJob {
		c.p.lines.log(c.log, slog.LevelWarn, "rawport: connection kept open after its job reset: no new job within its idle limit; the POS's next write fails and it reconnects, so no ticket is lost",
			"limit", c.p.o.ConnIdle)
	} else {
		c.p.lines.log(c.log, slog.LevelInfo, "rawport: connection closed: it sent nothing to print within raw_first_byte_timeout (a POS sends its job at once; status queries and padding do not keep a connection open); raise raw_first_byte_timeout if a POS of yours connects long before it prints",
			"limit", c.p.o.FirstByteTimeout, "open_for", now.Sub(c.idleSince).Round(time.Millisecond), "key", "raw_first_byte_timeout")
	}
}

// syncIdle tells the port whether the connection now carries no job, for
// its address's count (Options.MaxPerAddress).
func (c *conn) syncIdle() {
	if idle := !c.content; idle != c.countedIdle {
		c.countedIdle = idle
		c.p.addrs.setIdle(c.ip, idle)
	}
}

// leave takes the ended connection out of its address's counts.
func (c *conn) leave() {
	c.p.addrs.leave(c.ip, c.countedIdle)
	c.countedIdle = false
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
