package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"printgate/agent/api"
	"printgate/agent/config"
	"printgate/drivers/escpos"
	"printgate/spool"
)

// Submit is the one intake path: the LAN API, the cloud link, the raw
// ports, reprint and retry all hand their tasks to it, each answering in
// its own terms. Its order is the promise of docs/DESIGN.md, invariant 7:
//
//  1. a task_no already known is answered as the duplicate it is, with its
//     current state and lane, whatever else is wrong with the request now
//     (its printer removed by a reload, a document its printer's profile no
//     longer prints, a door's own refusal in nt.Invalid); unless the
//     request is for another printer or other content: then it is no
//     duplicate and is refused (api.TaskNoTaken, invariant 12);
//  2. then the task is judged once: the door's refusal, the printer, the
//     document against that printer's profile;
//  3. then it is accepted (spool fsync) and handed to its lane.
//
// It returns once the task is fsync'd; printing happens afterwards. Only an
// agent that cannot take work now (restoring, core stopped) answers before
// the dedupe: that is no refusal of the task, and the resend is answered.
func (a *Agent) Submit(ctx context.Context, nt spool.NewTask) (*spool.Task, bool, error) {
	if err := a.available(); err != nil {
		t, known := a.known(nt)
		if known {
			if c := a.notSameTicket(nt, t); c != nil {
				return nil, false, c
			}
		}
		if nt.Invalid != nil && !known {
			// Unfit whenever it is resent: say so now, as the door would.
			return nil, false, fmt.Errorf("task %s: %w", nt.TaskNo, nt.Invalid)
		}
		if known && !t.State.Terminal() && a.Failed() != nil {
			// A resend of the task the stop caught (below): the same
			// truth again, never "took nothing".
			return nil, false, storedNotPrinting(t)
		}
		return nil, false, err
	}
	if t, ok := a.known(nt); ok {
		return a.asKnown(nt, t)
	}
	if nt.Invalid != nil {
		return a.refuseTask(nt, fmt.Errorf("task %s: %w", nt.TaskNo, nt.Invalid))
	}
	// The lane stays the printer's from the lookup to the post: a reload
	// that removes or replaces it waits, then finds the task in the spool.
	a.lanesMu.RLock()
	defer a.lanesMu.RUnlock()
	l, ok := a.lanes[nt.Printer]
	if !ok {
		return a.refuseTask(nt, fmt.Errorf("%w: %q (configured: %v)", api.ErrUnknownPrinter, nt.Printer, a.order))
	}
	pc := l.pc
	if len(nt.Document) > 0 {
		doc, err := escpos.ParseDocument(nt.Document)
		if err == nil {
			err = escpos.CheckDocument(doc, pc.Profile)
		}
		if err != nil {
			return a.refuseTask(nt, fmt.Errorf("%w: %v", api.ErrBadDocument, err))
		}
	}
	if err := checkPayload(nt, pc.Profile); err != nil {
		return a.refuseTask(nt, err)
	}
	if nt.Timeout == 0 {
		nt.Timeout = pc.Timeout
	}
	origin := nt.Origin
	if origin == "" {
		origin = spool.OriginLocal
	}
	// The door's rate, after every check that writes nothing: a raw job
	// waited for its token on its connection already (rawSink.Accept).
	if origin != spool.OriginRaw {
		if err := a.doors.take(origin); err != nil {
			return a.refuseTask(nt, a.doorRefused(err))
		}
	}
	t, dup, err := a.spool.Accept(nt)
	if err != nil {
		// Nothing was taken: the token goes back (a raw job's too, which
		// waited for it in rawSink.Accept).
		a.doors.refund(origin)
		return a.refuseTask(nt, a.doorRefused(err))
	}
	if dup {
		return a.asKnown(nt, t)
	}
	a.m.IncAccepted(string(t.Origin), false)
	a.noteReclaimed()
	if a.doors.accepted(t.Origin) {
		a.observe(Event{Health: true})
	}
	a.log.Info("task accepted", "task_no", t.TaskNo, "printer", t.Printer, "state", t.State, "origin", t.Origin, "seq", t.Seq, "size", t.Size)
	// Asked before the post, not after: once posted, the lane may take the
	// task and fail on it at once, and that task was accepted like any
	// other a moment before the core stopped.
	stopped := a.Failed()
	a.setOwner(t.TaskNo, t.Printer)
	l.post(msgTask{task: t})
	// After the post: a deadline already due must reach the lane after the
	// task does.
	a.scheduleDeadline(t)
	if testHookPosted != nil {
		testHookPosted(a)
	}
	if stopped != nil {
		// The core stopped while this task was being written: it is on
		// disk and prints at the next start, but nobody prints it now.
		// Neither "accepted" (invariant 1) nor "took nothing": a POS
		// told that re-keys the order and prints it twice.
		return nil, false, storedNotPrinting(t)
	}
	return t, false, nil
}

// doorRefused reports a task refused for its door's quota or rate (a
// rate-limited WARN, the page's alert) and returns err, naming the config
// key for a quota.
func (a *Agent) doorRefused(err error) error {
	if a.doors.refused(err) {
		a.observe(Event{Health: true})
	}
	var qe *spool.QuotaError
	if errors.As(err, &qe) {
		door := OriginDoor(qe.Origin)
		return fmt.Errorf("%w; [spool] %s = %q sets the %s door's share of the spool", err, config.QuotaKey(door), a.doors.quotas[door].String(), door)
	}
	return err
}

// storedNotPrinting is the answer for task t, on disk, whose core stopped
// before printing it (api.ErrStoredNotPrinting).
func storedNotPrinting(t *spool.Task) error {
	return &api.StoredNotPrinting{TaskNo: t.TaskNo, State: string(t.State)}
}

// known returns the stored task when nt's task_no is already known: the
// dedupe that comes before every other check.
func (a *Agent) known(nt spool.NewTask) (*spool.Task, bool) {
	if nt.TaskNo == "" {
		return nil, false
	}
	t, err := a.spool.Get(nt.TaskNo)
	if err != nil {
		// Not found, or unreadable: the checks and Accept decide.
		return nil, false
	}
	return t, true
}

// refuseTask answers a task intake judged unfit with err, unless a submit of
// the same task_no racing this one was accepted meanwhile: that one is the
// duplicate this is.
func (a *Agent) refuseTask(nt spool.NewTask, err error) (*spool.Task, bool, error) {
	if t, ok := a.known(nt); ok {
		return a.asKnown(nt, t)
	}
	return nil, false, err
}

// asKnown answers nt, whose task_no is known as the stored task t: as the
// duplicate it is when it asks for the same ticket, else refused
// (api.TaskNoTaken). A duplicate is the same ticket (docs/DESIGN.md, invariant
// 12): a door that could answer "duplicate" for another door's task_no
// would let a cloud that saw a POS's next task_no in the events, or a
// guess, swallow the POS's real order.
func (a *Agent) asKnown(nt spool.NewTask, t *spool.Task) (*spool.Task, bool, error) {
	if c := a.notSameTicket(nt, t); c != nil {
		return nil, false, c
	}
	a.m.IncAccepted(string(t.Origin), true)
	return t, true, nil
}

// notSameTicket compares nt with the stored task t of the same task_no:
// the printer it names and its content (the stored sha256; a document
// also by its compact JSON while its body is kept, so the same document
// re-encoded by another door is still the same ticket). What the request
// does not say (no printer, no decodable body) is not compared, nor is a
// task whose record was lost (CORRUPT_RECORD: no sha256, its printer only
// the lane it was found on). A difference is logged, rate-limited: a peer
// can cause it at will.
func (a *Agent) notSameTicket(nt spool.NewTask, t *spool.Task) *api.TaskNoTaken {
	if t.SHA256 == "" {
		return nil
	}
	c := &api.TaskNoTaken{TaskNo: t.TaskNo, Origin: string(t.Origin)}
	if nt.Printer != "" && nt.Printer != t.Printer {
		c.Printer, c.Sent = t.Printer, nt.Printer
	}
	body := nt.Payload
	if len(nt.Document) > 0 {
		body = nt.Document
	}
	if len(body) > 0 {
		sum := sha256.Sum256(body)
		c.Content = hex.EncodeToString(sum[:]) != t.SHA256 && !sameDocument(nt.Document, t.Document)
	}
	if c.Printer == "" && !c.Content {
		return nil
	}
	origin := nt.Origin
	if origin == "" {
		origin = spool.OriginLocal
	}
	a.doors.warns.Warn(a.log, "TASK_NO CONFLICT: a door sent a known task_no for another ticket; refused, nothing printed for it, the stored ticket is untouched",
		"task_no", t.TaskNo, "door", origin, "stored_door", t.Origin, "code", c.Code(), "stored_printer", t.Printer, "sent_printer", nt.Printer)
	return c
}

// sameDocument reports whether two ticket documents are the same JSON once
// compacted (both present).
func sameDocument(x, y json.RawMessage) bool {
	if len(x) == 0 || len(y) == 0 {
		return false
	}
	var cx, cy bytes.Buffer
	if json.Compact(&cx, x) != nil || json.Compact(&cy, y) != nil {
		return false
	}
	return bytes.Equal(cx.Bytes(), cy.Bytes())
}

// testHookPosted, when set by a test, runs in Submit just after the task
// is handed to its lane: it lets a test have the lane fail in that gap.
var testHookPosted func(*Agent)

// Task returns a task by task_no.
func (a *Agent) Task(taskNo string) (*spool.Task, error) { return a.spool.Get(taskNo) }

// Tasks lists tasks a page at a time.
func (a *Agent) Tasks(o spool.ListOptions) (spool.Page, error) { return a.spool.List(o) }

// Cancel cancels a task that has not started printing. A task being sent or
// already finished cannot be canceled (api.ErrConflict).
func (a *Agent) Cancel(ctx context.Context, taskNo string) (*spool.Task, error) {
	t, err := a.spool.Get(taskNo)
	if err != nil {
		return nil, err
	}
	if t.State.Terminal() || t.State == spool.StateSending {
		return nil, fmt.Errorf("%w: task %s is %s", api.ErrConflict, taskNo, t.State)
	}
	reply := make(chan cancelResult, 1)
	if !a.toOwner(taskNo, msgCancel{taskNo: taskNo, reply: reply}) {
		return nil, fmt.Errorf("%w: task %s is not held by any lane", api.ErrConflict, taskNo)
	}
	select {
	case r := <-reply:
		return r.task, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

var versionSuffix = regexp.MustCompile(`^(.*)_v([0-9]+)$`)

// nextVersion returns the task_no of the next reprint version of taskNo:
// _vN becomes _vN+1, anything else gets _v2.
func nextVersion(taskNo string) string {
	if m := versionSuffix.FindStringSubmatch(taskNo); m != nil {
		n, err := strconv.Atoi(m[2])
		if err == nil {
			return fmt.Sprintf("%s_v%d", m[1], n+1)
		}
	}
	return taskNo + "_v2"
}

// Reprint prints a task again as a new version (_vN → _vN+1) marked REPRINT
// and linked by reprint_of. If that version exists already, the next free one
// is used, so each reprint request prints exactly one more copy.
func (a *Agent) Reprint(ctx context.Context, taskNo string) (*spool.Task, error) {
	return a.ReprintAs(ctx, taskNo, spool.OriginManager)
}

// ReprintAs is Reprint asked through the door of origin o (the cloud's
// reprint command: OriginCloud): the copy counts against that door's
// quota, so a door cannot fill the spool with reprints another door pays
// for.
func (a *Agent) ReprintAs(ctx context.Context, taskNo string, o spool.Origin) (*spool.Task, error) {
	orig, err := a.spool.Get(taskNo)
	if err != nil {
		return nil, err
	}
	t, err := a.newVersion(ctx, orig, orig.Printer, false, o)
	if err != nil {
		return nil, fmt.Errorf("reprint: %w", err)
	}
	return t, nil
}

// newVersion submits the next free version of orig (_vN → _vN+1) on
// printer: of origin o (the door that asked), urgent, linked by
// reprint_of, and marked POSSIBLE DUPLICATE when dup is set.
func (a *Agent) newVersion(ctx context.Context, orig *spool.Task, printer string, dup bool, o spool.Origin) (*spool.Task, error) {
	taskNo := orig.TaskNo
	if orig.Reclaimed {
		return nil, fmt.Errorf("%s: %w", taskNo, spool.ErrReclaimed)
	}
	if orig.Pruned {
		return nil, fmt.Errorf("%s: %w", taskNo, spool.ErrPruned)
	}
	next := taskNo
	for i := 0; i < 100; i++ {
		next = nextVersion(next)
		nt := spool.NewTask{
			TaskNo: next, Printer: printer, Priority: spool.PriorityUrgent, Origin: o,
			Payload: orig.Payload, Document: orig.Document, ReprintOf: taskNo, PossibleDuplicate: dup,
			// A cloud reprint: its result is stored with the new task.
			Command: spool.CommandFrom(ctx),
		}
		t, exists, err := a.Submit(ctx, nt)
		if errors.Is(err, api.ErrTaskNoTaken) {
			// Another ticket has that number (logged): it is not free.
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s as %s: %w", taskNo, next, err)
		}
		if !exists {
			return t, nil
		}
	}
	return nil, fmt.Errorf("%s: 100 versions already exist", taskNo)
}

// Refresh asks printer's monitor to read its status now instead of at the
// next poll, for example after someone put paper in.
func (a *Agent) Refresh(printer string) bool {
	l := a.lane(printer)
	ok := l != nil
	if ok {
		select {
		case l.pollNow <- struct{}{}:
		default:
		}
	}
	return ok
}

// Printers reports each printer's state and queue for the API and the page.
func (a *Agent) Printers() []api.PrinterInfo {
	_, lanes := a.laneList()
	out := make([]api.PrinterInfo, 0, len(lanes))
	for _, l := range lanes {
		info := l.info()
		info.RawPort, _, _ = a.rawPortStats(l.name)
		out = append(out, info)
	}
	return out
}
