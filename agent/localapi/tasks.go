package localapi

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"printgate/agent/api"
	"printgate/spool"
)

// taskView is a task as the API shows it (PROTOCOL.md §3). It never carries
// the payload or document: the submitter has them, and they may hold
// customer data nobody else on the LAN should read.
type taskView struct {
	TaskNo            string        `json:"task_no"`
	Printer           string        `json:"printer"`
	Target            string        `json:"target"`
	State             spool.State   `json:"state"`
	Reason            string        `json:"reason"`
	Message           string        `json:"message,omitempty"` // why it failed, e.g. the document line that cannot render
	Attempts          int           `json:"attempts"`
	Confirmation      string        `json:"confirmation"`
	PossibleDuplicate bool          `json:"possible_duplicate"`
	Origin            spool.Origin  `json:"origin"`
	ReprintOf         string        `json:"reprint_of"`
	Truncated         bool          `json:"truncated"` // a raw job cut short (PROTOCOL.md "Raw port")
	Seq               uint64        `json:"seq"`
	Timeline          []timelineRow `json:"timeline"`
}

type timelineRow struct {
	State   spool.State `json:"state"`
	At      time.Time   `json:"at"`
	Reason  string      `json:"reason"`
	Printer string      `json:"printer"`
}

func viewOf(t *spool.Task) taskView {
	v := taskView{
		TaskNo:            t.TaskNo,
		Printer:           t.Printer,
		Target:            t.Target,
		State:             t.State,
		Reason:            t.Reason,
		Message:           t.Message,
		Attempts:          t.Attempts,
		Confirmation:      string(t.Confirmation),
		PossibleDuplicate: t.PossibleDuplicate,
		Origin:            t.Origin,
		ReprintOf:         t.ReprintOf,
		Truncated:         t.Truncated,
		Seq:               t.Seq,
		Timeline:          make([]timelineRow, len(t.Timeline)),
	}
	for i, e := range t.Timeline {
		v.Timeline[i] = timelineRow{State: e.State, At: e.At, Reason: e.Reason, Printer: e.Printer}
	}
	return v
}

// taskNoParam returns the {task_no} path segment, checked.
func taskNoParam(r *http.Request) (string, *apiError) {
	no := r.PathValue("task_no")
	if err := spool.ValidTaskNo(no); err != nil {
		return no, newError(http.StatusBadRequest, api.CodeInvalidTask, "%s", err)
	}
	return no, nil
}

// get is GET /api/v1/tasks/{task_no}.
func (s *server) get(w http.ResponseWriter, r *http.Request) {
	t, ok := s.pathTask(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, viewOf(t))
}

// listAnswer is the body of GET /api/v1/tasks. Next is null on the last
// page, else the after= value for the following one.
type listAnswer struct {
	Tasks []taskView `json:"tasks"`
	Next  *uint64    `json:"next"`
}

// maxLimit is the largest page; a bigger one would hold the spool's read
// transaction and the answer in memory for too long.
const maxLimit = 1000

// list is GET /api/v1/tasks?state=&printer=&after=&limit=.
func (s *server) list(w http.ResponseWriter, r *http.Request) {
	o, e := listOptions(r.URL.Query())
	if e != nil {
		s.fail(w, r, e)
		return
	}
	p, err := s.b.Tasks(o)
	if err != nil {
		s.fail(w, r, fromBackend(err, "", o.Printer))
		return
	}
	ans := listAnswer{Tasks: make([]taskView, len(p.Tasks))}
	for i, t := range p.Tasks {
		ans.Tasks[i] = viewOf(t)
	}
	if p.Next != 0 {
		ans.Next = &p.Next
	}
	writeJSON(w, http.StatusOK, ans)
}

// listOptions checks the list query. Unknown parameters are refused rather
// than ignored: "?stat=QUEUED" silently listing everything would mislead.
func listOptions(q url.Values) (spool.ListOptions, *apiError) {
	o := spool.ListOptions{Limit: 50}
	for k, vs := range q {
		switch k {
		case "state", "printer", "after", "limit":
		default:
			return o, newError(http.StatusBadRequest, api.CodeBadQuery, "unknown query parameter %q; use state, printer, after and limit", k)
		}
		if len(vs) > 1 {
			return o, newError(http.StatusBadRequest, api.CodeBadQuery, "query parameter %q is given %d times; give it once", k, len(vs))
		}
	}
	if v := q.Get("state"); v != "" {
		st := spool.State(strings.ToUpper(v))
		if !st.Valid() {
			names := make([]string, len(spool.AllStates))
			for i, s := range spool.AllStates {
				names[i] = string(s)
			}
			return o, newError(http.StatusBadRequest, api.CodeBadQuery, "state %q is not one of %s", v, strings.Join(names, ", "))
		}
		o.State = st
	}
	if v := q.Get("printer"); v != "" {
		if err := spool.ValidPrinterName(v); err != nil {
			return o, newError(http.StatusBadRequest, api.CodeBadQuery, "%s", err)
		}
		o.Printer = v
	}
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return o, newError(http.StatusBadRequest, api.CodeBadQuery, "after %q is not a sequence number; pass the next value of the previous page", v)
		}
		o.After = n
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			return o, newError(http.StatusBadRequest, api.CodeBadQuery, "limit %q must be a whole number from 1 to %d", v, maxLimit)
		}
		o.Limit = n
	}
	return o, nil
}

// reprint is POST /api/v1/tasks/{task_no}/reprint: 202 with the new
// version the agent accepted.
func (s *server) reprint(w http.ResponseWriter, r *http.Request) {
	no, e := taskNoParam(r)
	if e != nil {
		s.fail(w, r, e)
		return
	}
	t, err := s.b.Reprint(r.Context(), no)
	if err != nil {
		e := fromBackend(err, no, "")
		if e.status == http.StatusConflict {
			e.message = s.stateMessage(no, "cannot be reprinted now")
		}
		s.fail(w, r, e)
		return
	}
	writeJSON(w, http.StatusAccepted, viewOf(t))
}

// cancel is POST /api/v1/tasks/{task_no}/cancel: 200 with the canceled
// task, 409 once it is SENDING or finished.
func (s *server) cancel(w http.ResponseWriter, r *http.Request) {
	no, e := taskNoParam(r)
	if e != nil {
		s.fail(w, r, e)
		return
	}
	t, err := s.b.Cancel(r.Context(), no)
	if err != nil {
		e := fromBackend(err, no, "")
		if e.status == http.StatusConflict {
			e.message = s.stateMessage(no, "can no longer be canceled; only tasks not yet SENDING and not finished can be")
		}
		s.fail(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, viewOf(t))
}

// stateMessage explains a 409 with the task's current state, read afresh.
func (s *server) stateMessage(no, what string) string {
	t, err := s.b.Task(no)
	switch {
	case err != nil:
		return "task " + no + " " + what
	case t.State == spool.StateSending:
		return "task " + no + " is being sent to the printer right now and " + what
	}
	return "task " + no + " is " + string(t.State) + " and " + what
}

// pathTask is the task the request's {task_no} names, or false once it has
// answered the error (bad task_no, unknown task, spool trouble).
func (s *server) pathTask(w http.ResponseWriter, r *http.Request) (*spool.Task, bool) {
	no, e := taskNoParam(r)
	if e != nil {
		s.fail(w, r, e)
		return nil, false
	}
	t, err := s.b.Task(no)
	if err != nil {
		s.fail(w, r, fromBackend(err, no, ""))
		return nil, false
	}
	return t, true
}
