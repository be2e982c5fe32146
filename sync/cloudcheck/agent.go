package cloudcheck

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"printgate/spool"
	"printgate/sync/link"
	"printgate/sync/wire"
)

// printerName is the one printer every played agent has; a job for any
// other printer is rejected unknown_printer, as the agent would.
const printerName = "kitchen"

// errUnknownPrinter is the played agent's refusal of a job for a printer
// it does not have.
var errUnknownPrinter = errors.New("unknown printer")

// errNotCloudTask is the played agent's refusal of a cancel of a task the
// cloud did not send (PROTOCOL §5, command_result not_cloud_task).
var errNotCloudTask = errors.New("not a cloud task")

// player is one agent cloudcheck plays: the real link (sync/link) over a
// real spool in a temporary directory, with a recorder on its connection.
// It has no printer hardware: tasks stay where the checks move them.
type player struct {
	ch   *checker
	id   string
	dir  string
	sp   *spool.Spool
	rec  *recorder
	link *link.Link
	logs *tailer

	mu      sync.Mutex
	token   string
	revoked []string
	// hold, when set for a task_no, makes Submit wait on the channel
	// before it writes the task, so a check can look at the cloud while
	// the agent has not yet fsync'd.
	hold map[string]chan struct{}
	// held is told each task_no whose Submit started waiting on hold.
	held chan string
	// submits counts Submit calls by task_no.
	submits map[string]int
	// skip is added to the time the spool's retention is measured on.
	skip *atomic.Int64

	stop      context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// newPlayer makes an agent with its own spool; start connects it.
func (ch *checker) newPlayer(role string) (*player, error) {
	id := ch.runID + "-" + role
	if ch.api == nil && ch.opts.AgentID != "" {
		// The one agent the given token is for; the groups take turns.
		id = ch.opts.AgentID
	}
	dir := filepath.Join(ch.dir, role)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("agent %s: %w", id, err)
	}
	// skip moves the spool's retention clock on, so a check can end a
	// task_no's dedupe window without waiting a week (events.lives).
	skip := new(atomic.Int64)
	start := ch.clock.Now()
	sp, err := spool.Open(filepath.Join(dir, "spool.db"), spool.Options{Now: ch.clock.Now,
		Elapsed: func() time.Duration { return ch.clock.Now().Sub(start) + time.Duration(skip.Load()) }})
	if err != nil {
		return nil, fmt.Errorf("agent %s: open spool: %w", id, err)
	}
	p := &player{
		ch: ch, id: id, dir: dir, sp: sp, skip: skip, rec: newRecorder(ch.clock), logs: newTailer(),
		hold: map[string]chan struct{}{}, held: make(chan string, 16), submits: map[string]int{},
	}
	d := &websocket.Dialer{HandshakeTimeout: 15 * time.Second}
	nd := &net.Dialer{Timeout: 15 * time.Second}
	d.NetDialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := nd.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return p.rec.tap(c), nil
	}
	d.NetDialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := nd.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		host, _, _ := net.SplitHostPort(addr)
		tc := tls.Client(c, &tls.Config{ServerName: host, RootCAs: ch.opts.RootCAs, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		return p.rec.tap(tc), nil
	}
	l, err := link.New(link.Options{
		URL: ch.opts.CloudURL, AgentID: id, Version: ch.opts.Version,
		Token: func() (string, error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.token == "" {
				return "", os.ErrNotExist
			}
			return p.token, nil
		},
		Backend: p, Classify: classify, Outbox: sp, Tailer: p.logs,
		Revoked: func(reason string) {
			p.mu.Lock()
			p.token = ""
			p.revoked = append(p.revoked, reason)
			p.mu.Unlock()
		},
		Clock: ch.clock, Logger: ch.log.With("agent", id), Dialer: d,
		BackoffBase: 200 * time.Millisecond, BackoffCap: 2 * time.Second,
	})
	if err != nil {
		sp.Close()
		return nil, fmt.Errorf("agent %s: %w", id, err)
	}
	p.link = l
	ch.mu.Lock()
	ch.players = append(ch.players, p)
	ch.mu.Unlock()
	return p, nil
}

// start runs the link with token until close.
func (p *player) start(token string) {
	p.mu.Lock()
	p.token = token
	p.mu.Unlock()
	ctx, stop := context.WithCancel(context.Background())
	p.stop, p.done = stop, make(chan struct{})
	go func() {
		defer close(p.done)
		p.link.Run(ctx)
	}()
}

// close stops the link and closes the spool; it is safe to call again.
func (p *player) close() {
	p.closeOnce.Do(func() {
		if p.stop != nil {
			p.stop()
			<-p.done
		}
		p.logs.close()
		p.sp.Close()
	})
}

// Submit takes a cloud job as the agent does: a known task_no is a
// duplicate before any check, then the link's own refusal, then the
// printer; Accept returns once the task is fsync'd.
func (p *player) Submit(ctx context.Context, nt spool.NewTask) (*spool.Task, bool, error) {
	p.mu.Lock()
	p.submits[nt.TaskNo]++
	gate := p.hold[nt.TaskNo]
	p.mu.Unlock()
	if t, err := p.sp.Get(nt.TaskNo); err == nil {
		return t, true, nil
	}
	if nt.Invalid != nil {
		return nil, false, fmt.Errorf("submit %s: %w", nt.TaskNo, nt.Invalid)
	}
	if nt.Printer != printerName {
		return nil, false, fmt.Errorf("%w %q: this agent has only %q", errUnknownPrinter, nt.Printer, printerName)
	}
	if gate != nil {
		p.held <- nt.TaskNo
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
	return p.sp.Accept(nt)
}

// Reprint stores a new version of a task (…_v2 for …_v1), as the agent
// does.
func (p *player) Reprint(ctx context.Context, taskNo string) (*spool.Task, error) {
	orig, err := p.sp.Get(taskNo)
	if err != nil {
		return nil, err
	}
	t, _, err := p.sp.Accept(spool.NewTask{TaskNo: nextVersion(taskNo), Printer: orig.Printer, Payload: orig.Payload,
		Document: orig.Document, Origin: spool.OriginManager, ReprintOf: taskNo})
	return t, err
}

// nextVersion is the task_no of a reprint: _vN becomes _vN+1.
func nextVersion(taskNo string) string {
	if i := strings.LastIndex(taskNo, "_v"); i >= 0 {
		if n, err := strconv.Atoi(taskNo[i+2:]); err == nil {
			return taskNo[:i+2] + strconv.Itoa(n+1)
		}
	}
	return taskNo + "_v2"
}

// Cancel cancels a task that has not started printing.
func (p *player) Cancel(ctx context.Context, taskNo string) (*spool.Task, error) {
	cur, err := p.sp.Get(taskNo)
	if err != nil {
		return nil, err
	}
	if cur.Origin != spool.OriginCloud {
		// PROTOCOL §5: a cloud cancels only its own tasks by default.
		return nil, fmt.Errorf("%w: task %s came through the %s door", errNotCloudTask, taskNo, cur.Origin)
	}
	return p.sp.Transition(taskNo, cur.State, spool.StateCanceled, spool.Change{})
}

// Printers is the agent's one printer, ready.
func (p *player) Printers() []wire.Printer {
	return []wire.Printer{{Name: printerName, State: "READY"}}
}

func classify(err error) (string, string, bool) {
	if errors.Is(err, errUnknownPrinter) {
		return "unknown_printer", err.Error(), false
	}
	if errors.Is(err, errNotCloudTask) {
		return "not_cloud_task", err.Error(), false
	}
	return link.DefaultClassify(err)
}

// holdSubmit makes the next Submit of taskNo wait until release is
// called.
func (p *player) holdSubmit(taskNo string) (release func()) {
	gate := make(chan struct{})
	p.mu.Lock()
	p.hold[taskNo] = gate
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			delete(p.hold, taskNo)
			p.mu.Unlock()
			close(gate)
		})
	}
}

// accept stores a local task (as a POS would), whose events go to the
// outbox, and tells the link.
func (p *player) accept(taskNo string) (*spool.Task, error) {
	return p.acceptFrom(taskNo, spool.OriginLocal)
}

// acceptFrom stores a task as if it came through origin's door.
func (p *player) acceptFrom(taskNo string, origin spool.Origin) (*spool.Task, error) {
	t, _, err := p.sp.Accept(spool.NewTask{TaskNo: taskNo, Printer: printerName, Payload: []byte("cloudcheck\n"), Origin: origin})
	if err != nil {
		return nil, fmt.Errorf("agent %s: accept %s: %w", p.id, taskNo, err)
	}
	return t, nil
}

// advance moves a task through states, one outbox event each.
func (p *player) advance(taskNo string, states ...spool.State) error {
	t, err := p.sp.Get(taskNo)
	if err != nil {
		return fmt.Errorf("agent %s: %w", p.id, err)
	}
	from := t.State
	for _, to := range states {
		c := spool.Change{}
		if to == spool.StatePrinted {
			c.Confirmation = spool.ConfirmPrinted
		}
		if _, err := p.sp.Transition(taskNo, from, to, c); err != nil {
			return fmt.Errorf("agent %s: %s %s → %s: %w", p.id, taskNo, from, to, err)
		}
		from = to
	}
	return nil
}

// tailer is the played agent's log, for logs_tail: lines added with add
// are sent to every tail that follows.
type tailer struct {
	mu      sync.Mutex
	lines   []string
	changed chan struct{}
	closed  bool
	running int // tails not yet returned
}

// active is how many tails are running.
func (t *tailer) active() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.running
}

func newTailer() *tailer { return &tailer{changed: make(chan struct{})} }

func (t *tailer) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	close(t.changed)
	t.changed = make(chan struct{})
}

func (t *tailer) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.closed = true
		close(t.changed)
	}
}

// Tail sends the last lines lines (level and contains filter nothing
// here: the played agent's lines are all INFO), then, if follow, each new
// one.
func (t *tailer) Tail(ctx context.Context, level, contains string, lines int, follow bool, send func([]string) error) error {
	t.mu.Lock()
	t.running++
	defer func() {
		t.mu.Lock()
		t.running--
		t.mu.Unlock()
	}()
	from := max(0, len(t.lines)-lines)
	first := append([]string(nil), t.lines[from:]...)
	next, wake := len(t.lines), t.changed
	t.mu.Unlock()
	if len(first) > 0 {
		if err := send(first); err != nil {
			return err
		}
	}
	for follow {
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		}
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return nil
		}
		more := append([]string(nil), t.lines[next:]...)
		next, wake = len(t.lines), t.changed
		t.mu.Unlock()
		if len(more) > 0 {
			if err := send(more); err != nil {
				return err
			}
		}
	}
	return nil
}
