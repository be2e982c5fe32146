package localapi_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"printgate/agent/api"
	"printgate/agent/localapi"
	"printgate/drivers/escpos"
	"printgate/spool"
)

// fakeBackend is an in-memory agent: it keeps tasks in a map and enforces
// what the real one does (dedupe by task_no first, then the door's
// refusal, configured printers, documents the renderer's parser takes,
// size limit, a full spool, which states may be canceled, reprint
// versions), so the handlers are tested against behaviour, not against
// canned answers.
type fakeBackend struct {
	mu           sync.Mutex
	printers     []api.PrinterInfo
	tasks        map[string]*spool.Task
	seq          uint64
	maxTaskBytes int
	full         bool  // Submit answers ErrFull, like a spool out of room
	failWith     error // every call answers this, like a broken store
	health       api.Health
	now          time.Time
}

var _ localapi.Backend = (*fakeBackend)(nil)

func newFake() *fakeBackend {
	return &fakeBackend{
		printers: []api.PrinterInfo{
			{Name: "kitchen", URL: "tcp://192.168.1.50:9100", State: "READY", Queue: 0, Since: time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)},
			{Name: "bar", URL: "serial:///dev/ttyUSB0?baud=19200", State: "OFFLINE", FailoverTo: "kitchen"},
		},
		tasks:        map[string]*spool.Task{},
		maxTaskBytes: 1 << 20,
		health:       api.Health{Status: "ok", Link: "offline", Outbox: 3},
		now:          time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
	}
}

func (f *fakeBackend) configured(printer string) bool {
	return slices.ContainsFunc(f.printers, func(p api.PrinterInfo) bool { return p.Name == printer })
}

// clone returns a copy the caller may keep: the handlers must not be able to
// change stored tasks behind the backend's back.
func clone(t *spool.Task) *spool.Task {
	c := *t
	c.Timeline = slices.Clone(t.Timeline)
	return &c
}

func (f *fakeBackend) Submit(ctx context.Context, nt spool.NewTask) (*spool.Task, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failWith != nil {
		return nil, false, f.failWith
	}
	if t, ok := f.tasks[nt.TaskNo]; ok {
		return clone(t), true, nil
	}
	if nt.Invalid != nil {
		return nil, false, fmt.Errorf("submit %s: %w", nt.TaskNo, nt.Invalid)
	}
	return f.accept(nt)
}

func (f *fakeBackend) accept(nt spool.NewTask) (*spool.Task, bool, error) {
	if !f.configured(nt.Printer) {
		return nil, false, fmt.Errorf("submit %s: printer %q: %w", nt.TaskNo, nt.Printer, api.ErrUnknownPrinter)
	}
	if len(nt.Document) > 0 {
		// As the agent: the renderer's parser judges the document.
		if _, err := escpos.ParseDocument(nt.Document); err != nil {
			return nil, false, fmt.Errorf("%w: %v", api.ErrBadDocument, err)
		}
	}
	if err := spool.ValidTaskNo(nt.TaskNo); err != nil {
		return nil, false, err
	}
	if (len(nt.Payload) == 0) == (len(nt.Document) == 0) {
		return nil, false, fmt.Errorf("%w: needs exactly one of payload and document", spool.ErrInvalid)
	}
	if n := len(nt.Payload) + len(nt.Document); n > f.maxTaskBytes {
		return nil, false, fmt.Errorf("task %s is %d bytes, over the %d byte limit: %w", nt.TaskNo, n, f.maxTaskBytes, spool.ErrTooLarge)
	}
	if f.full {
		return nil, false, fmt.Errorf("accept %s: %w", nt.TaskNo, spool.ErrFull)
	}
	f.seq++
	f.now = f.now.Add(time.Second)
	t := &spool.Task{
		TaskNo: nt.TaskNo, Printer: nt.Printer, Priority: cmp.Or(nt.Priority, spool.PriorityNormal),
		Origin: cmp.Or(nt.Origin, spool.OriginLocal), Payload: nt.Payload, Document: nt.Document,
		Size: len(nt.Payload) + len(nt.Document), Seq: f.seq, State: spool.StateAccepted,
		ReprintOf: nt.ReprintOf, AcceptedAt: f.now, UpdatedAt: f.now,
		Timeline: []spool.TimelineEntry{{State: spool.StateAccepted, At: f.now, Printer: nt.Printer}},
	}
	if nt.Timeout > 0 {
		t.Deadline = f.now.Add(nt.Timeout)
	}
	f.tasks[t.TaskNo] = t
	return clone(t), false, nil
}

func (f *fakeBackend) Task(taskNo string) (*spool.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failWith != nil {
		return nil, f.failWith
	}
	t, ok := f.tasks[taskNo]
	if !ok {
		return nil, fmt.Errorf("get %s: %w", taskNo, spool.ErrNotFound)
	}
	return clone(t), nil
}

// Tasks pages like spool.List: accept order, After is the last seq of the
// previous page, Next is set only when more tasks match.
func (f *fakeBackend) Tasks(o spool.ListOptions) (spool.Page, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failWith != nil {
		return spool.Page{}, f.failWith
	}
	all := make([]*spool.Task, 0, len(f.tasks))
	for _, t := range f.tasks {
		all = append(all, t)
	}
	slices.SortFunc(all, func(a, b *spool.Task) int { return cmp.Compare(a.Seq, b.Seq) })
	var p spool.Page
	for _, t := range all {
		if t.Seq <= o.After || (o.State != "" && t.State != o.State) ||
			(o.Printer != "" && t.Printer != o.Printer && t.Target != o.Printer) {
			continue
		}
		if len(p.Tasks) == o.Limit {
			p.Next = p.Tasks[len(p.Tasks)-1].Seq
			break
		}
		p.Tasks = append(p.Tasks, clone(t))
	}
	return p, nil
}

// Reprint accepts the next free version of a finished task.
func (f *fakeBackend) Reprint(ctx context.Context, taskNo string) (*spool.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failWith != nil {
		return nil, f.failWith
	}
	old, ok := f.tasks[taskNo]
	if !ok {
		return nil, fmt.Errorf("reprint %s: %w", taskNo, spool.ErrNotFound)
	}
	if !old.State.Terminal() {
		return nil, fmt.Errorf("reprint %s: still %s: %w", taskNo, old.State, api.ErrConflict)
	}
	no := nextVersion(taskNo)
	for f.tasks[no] != nil {
		no = nextVersion(no)
	}
	t, _, err := f.accept(spool.NewTask{TaskNo: no, Printer: old.Printer, Priority: old.Priority,
		Origin: spool.OriginLocal, Payload: old.Payload, Document: old.Document, ReprintOf: taskNo})
	return t, err
}

func (f *fakeBackend) Cancel(ctx context.Context, taskNo string) (*spool.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failWith != nil {
		return nil, f.failWith
	}
	t, ok := f.tasks[taskNo]
	if !ok {
		return nil, fmt.Errorf("cancel %s: %w", taskNo, spool.ErrNotFound)
	}
	if !spool.CanTransition(t.State, spool.StateCanceled) {
		return nil, fmt.Errorf("cancel %s in state %s: %w", taskNo, t.State, api.ErrConflict)
	}
	f.setState(t, spool.StateCanceled)
	return clone(t), nil
}

// move puts a task in state, as the lanes would.
func (f *fakeBackend) move(taskNo string, state spool.State) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setState(f.tasks[taskNo], state)
}

func (f *fakeBackend) setState(t *spool.Task, state spool.State) {
	f.now = f.now.Add(time.Second)
	t.State, t.UpdatedAt = state, f.now
	if state == spool.StatePrinted {
		t.Confirmation = spool.ConfirmPrinted
		t.Attempts++
	}
	t.Timeline = append(t.Timeline, spool.TimelineEntry{State: state, At: f.now, Printer: t.Lane()})
}

func (f *fakeBackend) Printers() []api.PrinterInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.printers)
}

func (f *fakeBackend) Health() api.Health {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.health
}
