package web

import (
	"context"
	"fmt"
	"html"
	"html/template"
	"slices"
	"strings"
	"sync"
	"time"

	"printgate/agent/api"
	"printgate/agent/logring"
	"printgate/drivers"
	"printgate/spool"
)

// fakeBackend is an in-memory Backend that records the actions it is asked
// for. Tasks are kept in accept order and paged like spool.List.
type fakeBackend struct {
	mu       sync.Mutex
	tasks    []*spool.Task
	printers []api.PrinterDetail
	link     api.LinkInfo
	health   api.Health
	pairing  api.PairingInfo
	found    []drivers.Found
	calls    []string
	// errs makes the named action fail ("reprint", "retry", "cancel",
	// "test", "unpair").
	errs map[string]error
	subs []chan api.Change
	// subscribed is closed once Subscribe was called.
	subscribed chan struct{}
	// scanGate, when set, holds Scan after its first progress call
	// until closed or the scan's context ends.
	scanGate chan struct{}
	tailOpts []logring.TailOptions
	tail     []string
	nextNo   int
}

var _ Backend = (*fakeBackend)(nil)

func newFake() *fakeBackend {
	return &fakeBackend{
		printers: []api.PrinterDetail{
			{PrinterInfo: api.PrinterInfo{Name: "kitchen", URL: "tcp://192.0.2.10", State: "READY", Queue: 2, RawPort: "0.0.0.0:9101"}, Backup: "bar", Profile: "epson-80", Capabilities: []string{"80 mm, 48 columns", "cutter"}, Model: "TM-T20II", LastTask: "T-last", LastAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
				RawJobs: 7, RawRefused: 1},
			{PrinterInfo: api.PrinterInfo{Name: "bar", URL: "tcp://192.0.2.11", State: "READY"}},
		},
		link:       api.LinkInfo{State: "online", Outbox: 3},
		health:     api.Health{Status: "ok"},
		pairing:    api.PairingInfo{Configured: true, Paired: true, Store: "Store 12"},
		errs:       map[string]error{},
		subscribed: make(chan struct{}),
	}
}

func (f *fakeBackend) call(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
}

func (f *fakeBackend) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeBackend) err(action string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.errs[action]
}

// add stores a task as accepted at at, with document doc.
func (f *fakeBackend) add(no string, st spool.State, at time.Time, doc string) *spool.Task {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &spool.Task{TaskNo: no, Printer: "kitchen", State: st, Origin: spool.OriginLocal, AcceptedAt: at, UpdatedAt: at,
		Seq: uint64(len(f.tasks) + 1), Document: []byte(doc),
		Timeline: []spool.TimelineEntry{{State: spool.StateAccepted, At: at}, {State: st, At: at.Add(time.Second), Reason: "NO_ACK", Printer: "kitchen", Attempts: 1}}}
	f.tasks = append(f.tasks, t)
	return t
}

func (f *fakeBackend) Submit(ctx context.Context, t spool.NewTask) (*spool.Task, bool, error) {
	return nil, false, fmt.Errorf("not in the fake")
}

func (f *fakeBackend) Task(no string) (*spool.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.tasks {
		if t.TaskNo == no {
			c := *t
			return &c, nil
		}
	}
	return nil, fmt.Errorf("task %s: %w", no, spool.ErrNotFound)
}

func (f *fakeBackend) Tasks(o spool.ListOptions) (spool.Page, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o.Limit <= 0 {
		o.Limit = 50
	}
	var p spool.Page
	for i := range f.tasks {
		t := f.tasks[i]
		if o.Desc {
			t = f.tasks[len(f.tasks)-1-i]
			if o.After != 0 && t.Seq >= o.After {
				continue
			}
		} else if t.Seq <= o.After {
			continue
		}
		if o.State != "" && t.State != o.State {
			continue
		}
		if o.Printer != "" && t.Printer != o.Printer && t.Target != o.Printer {
			continue
		}
		if len(p.Tasks) == o.Limit {
			p.Next = p.Tasks[len(p.Tasks)-1].Seq
			break
		}
		p.Tasks = append(p.Tasks, t)
	}
	return p, nil
}

func (f *fakeBackend) newVersion(of string) *spool.Task {
	f.mu.Lock()
	f.nextNo++
	no := fmt.Sprintf("%s-r%d", of, f.nextNo)
	f.mu.Unlock()
	t := f.add(no, spool.StateQueued, time.Now(), "")
	t.ReprintOf = of
	return t
}

func (f *fakeBackend) Reprint(ctx context.Context, no string) (*spool.Task, error) {
	f.call("reprint " + no)
	if err := f.err("reprint"); err != nil {
		return nil, err
	}
	return f.newVersion(no), nil
}

func (f *fakeBackend) Cancel(ctx context.Context, no string) (*spool.Task, error) {
	f.call("cancel " + no)
	if err := f.err("cancel"); err != nil {
		return nil, err
	}
	t, err := f.Task(no)
	if err != nil {
		return nil, err
	}
	t.State = spool.StateCanceled
	return t, nil
}

func (f *fakeBackend) Retry(ctx context.Context, no, printer string) (*spool.Task, error) {
	f.call("retry " + no + " " + printer)
	if err := f.err("retry"); err != nil {
		return nil, err
	}
	return f.newVersion(no), nil
}

func (f *fakeBackend) Printers() []api.PrinterInfo {
	var out []api.PrinterInfo
	for _, p := range f.PrinterDetails() {
		out = append(out, p.PrinterInfo)
	}
	return out
}

func (f *fakeBackend) PrinterDetails() []api.PrinterDetail {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.printers)
}

func (f *fakeBackend) setPrinter(name, state, failover string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.printers {
		if f.printers[i].Name == name {
			f.printers[i].State, f.printers[i].FailoverTo = state, failover
		}
	}
}

func (f *fakeBackend) Health() api.Health {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.health
}

func (f *fakeBackend) TestPrint(ctx context.Context, printer string) (*spool.Task, error) {
	f.call("test " + printer)
	if err := f.err("test"); err != nil {
		return nil, err
	}
	return f.add("test-"+printer, spool.StateQueued, time.Now(), ""), nil
}

func (f *fakeBackend) Discover() ([]drivers.Found, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.found), nil
}

func (f *fakeBackend) Scan(ctx context.Context, cidr string, progress func(done, total int)) ([]drivers.Found, error) {
	f.call("scan")
	progress(1, 4)
	f.mu.Lock()
	gate := f.scanGate
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	progress(4, 4)
	return []drivers.Found{{Kind: drivers.SchemeTCP, URL: "tcp://192.0.2.50:9100", Name: "192.0.2.50:9100", Answers: true}}, nil
}

func (f *fakeBackend) Link() api.LinkInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.link
}

func (f *fakeBackend) Pairing(ctx context.Context) api.PairingInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pairing
}

func (f *fakeBackend) Unpair() error {
	f.call("unpair")
	return f.err("unpair")
}

func (f *fakeBackend) Subscribe(ctx context.Context) <-chan api.Change {
	ch := make(chan api.Change, 16)
	f.mu.Lock()
	f.subs = append(f.subs, ch)
	if len(f.subs) == 1 {
		close(f.subscribed)
	}
	f.mu.Unlock()
	context.AfterFunc(ctx, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.subs = slices.DeleteFunc(f.subs, func(c chan api.Change) bool { return c == ch })
		close(ch)
	})
	return ch
}

// emit delivers c to every subscriber, like the agent: without waiting.
func (f *fakeBackend) emit(c api.Change) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.subs {
		select {
		case ch <- c:
		default:
		}
	}
}

func (f *fakeBackend) Tail(ctx context.Context, o logring.TailOptions, send func(lines []string) error) error {
	f.mu.Lock()
	f.tailOpts = append(f.tailOpts, o)
	var lines []string
	for _, l := range f.tail {
		if strings.Contains(strings.ToLower(l), strings.ToLower(o.Contains)) {
			lines = append(lines, l)
		}
	}
	f.mu.Unlock()
	if err := send(lines); err != nil {
		return err
	}
	if o.Follow {
		<-ctx.Done()
	}
	return nil
}

func (f *fakeBackend) Preview(t *spool.Task) (template.HTML, error) {
	if t.State == spool.StateFailed {
		return "", fmt.Errorf("cannot decode the payload")
	}
	return template.HTML(`<div class="paper paper-48"><div class="row">` + html.EscapeString(t.TaskNo) + `</div></div>`), nil
}

func foundSerial() drivers.Found {
	return drivers.Found{Kind: drivers.SchemeSerial, URL: "serial://COM3?baud=19200", Name: "COM3", Product: "USB Serial"}
}
