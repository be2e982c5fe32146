package web

import (
	"bytes"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"printgate/agent/api"
	"printgate/spool"
)

// Task list limits.
const (
	// tasksPerPage is the rows a list page shows.
	tasksPerPage = 50
	// MaxSearchScan is the most tasks one search request reads when
	// filtering by text or time, so a search over a large spool answers
	// quickly; the page says when it stopped and offers to go on.
	MaxSearchScan = 5000
	// timeLayout is how the filter shows a time: ISO, as the page shows
	// dates everywhere (a datetime-local input showed the browser's
	// locale, such as mm/dd/yyyy).
	timeLayout = "2006-01-02 15:04"
)

// filterLayouts are the times the filter takes: timeLayout, the same with
// a T (what the datetime-local input sent, in links kept from before), and
// a date alone, its first minute.
var filterLayouts = []string{timeLayout, "2006-01-02T15:04", "2006-01-02"}

// parseFilterTime reads a filter time as typed, in the agent's zone, and
// returns it with its text in timeLayout; date-only is its first minute.
func parseFilterTime(s string) (time.Time, string, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range filterLayouts {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, t.Format(timeLayout), true
		}
	}
	return time.Time{}, "", false
}

// taskFilter is the task list's query.
type taskFilter struct {
	State   string
	Printer string
	Q       string
	From    string
	To      string
	After   uint64

	from, to time.Time
}

func parseTaskFilter(q url.Values) (taskFilter, bool) {
	f := taskFilter{
		State:   q.Get("state"),
		Printer: q.Get("printer"),
		Q:       strings.TrimSpace(q.Get("q")),
		From:    q.Get("from"),
		To:      q.Get("to"),
	}
	if !spool.State(f.State).Valid() {
		f.State = ""
	}
	f.After, _ = strconv.ParseUint(q.Get("after"), 10, 64)
	ok := true
	if f.From != "" {
		t, text, good := parseFilterTime(f.From)
		ok, f.From, f.from = ok && good, text, t
	}
	if f.To != "" {
		t, text, good := parseFilterTime(f.To)
		ok, f.To = ok && good, text
		if good {
			// The minute named is included.
			f.to = t.Add(time.Minute)
		}
	}
	return f, ok
}

// scanning reports whether the filter needs tasks read one by one (text
// or time) rather than a straight page from the spool.
func (f taskFilter) scanning() bool { return f.Q != "" || !f.from.IsZero() || !f.to.IsZero() }

// matches reports whether t passes the text and time filters. The text is
// a task_no substring, or any text inside the document or payload (an
// order number printed on the ticket), in any case.
func (f taskFilter) matches(t *spool.Task) bool {
	if !f.from.IsZero() && t.AcceptedAt.Before(f.from) {
		return false
	}
	if !f.to.IsZero() && !t.AcceptedAt.Before(f.to) {
		return false
	}
	if f.Q == "" {
		return true
	}
	q := strings.ToLower(f.Q)
	if strings.Contains(strings.ToLower(t.TaskNo), q) {
		return true
	}
	if len(t.Document) > 0 && bytes.Contains(bytes.ToLower(t.Document), []byte(q)) {
		return true
	}
	return len(t.Payload) > 0 && bytes.Contains(bytes.ToLower(t.Payload), []byte(q))
}

// query is the filter as a query string, with after set to cursor (0:
// none).
func (f taskFilter) query(cursor uint64) string {
	v := url.Values{}
	for k, s := range map[string]string{"state": f.State, "printer": f.Printer, "q": f.Q, "from": f.From, "to": f.To} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if cursor != 0 {
		v.Set("after", strconv.FormatUint(cursor, 10))
	}
	return v.Encode()
}

// taskListData is the tasks page.
type taskListData struct {
	Filter    taskFilter
	States    []spool.State
	Printers  []string
	Tasks     []*spool.Task
	Next      template.URL // the next page, "" at the end
	First     template.URL // the first page, "" when on it
	ScanLimit bool         // the search read MaxSearchScan tasks and stopped
	Scanned   int
	BadTime   bool
}

// findTasks returns one page of tasks matching f, the cursor of the next
// page (0: none) and whether the scan limit stopped the search.
func (p *Page) findTasks(f taskFilter) ([]*spool.Task, uint64, bool, int, error) {
	o := spool.ListOptions{State: spool.State(f.State), Printer: f.Printer, After: f.After, Desc: true, Limit: tasksPerPage}
	if !f.scanning() {
		pg, err := p.b.Tasks(o)
		return pg.Tasks, pg.Next, false, len(pg.Tasks), err
	}
	o.Limit = 200
	var out []*spool.Task
	scanned := 0
	for {
		pg, err := p.b.Tasks(o)
		if err != nil {
			return nil, 0, false, scanned, err
		}
		for i, t := range pg.Tasks {
			scanned++
			// Seq order is accept order, so accepted_at only falls
			// going back (a clock step aside): older than from ends it.
			if !f.from.IsZero() && t.AcceptedAt.Before(f.from) {
				return out, 0, false, scanned, nil
			}
			if f.matches(t) {
				out = append(out, t)
				if len(out) == tasksPerPage {
					if i < len(pg.Tasks)-1 || pg.Next != 0 {
						return out, t.Seq, false, scanned, nil
					}
					return out, 0, false, scanned, nil
				}
			}
			if scanned >= MaxSearchScan {
				if i < len(pg.Tasks)-1 || pg.Next != 0 {
					return out, t.Seq, true, scanned, nil
				}
				return out, 0, false, scanned, nil
			}
		}
		if pg.Next == 0 {
			return out, 0, false, scanned, nil
		}
		o.After = pg.Next
	}
}

func (p *Page) printerNames() []string {
	var names []string
	for _, pr := range p.b.PrinterDetails() {
		names = append(names, pr.Name)
	}
	return names
}

// taskList serves GET /tasks.
func (p *Page) taskList(w http.ResponseWriter, r *http.Request, sess *session) {
	v := p.newView(r, sess, "tasks")
	v.Title = v.L.T("tasks.title")
	f, ok := parseTaskFilter(r.URL.Query())
	tasks, next, limit, scanned, err := p.findTasks(f)
	if err != nil {
		p.serverError(w, r, "problem.tasks", err)
		return
	}
	d := taskListData{Filter: f, States: spool.AllStates, Printers: p.printerNames(), Tasks: tasks, ScanLimit: limit, Scanned: scanned, BadTime: !ok}
	// The queries are built by url.Values.Encode, so they are safe URLs.
	if next != 0 {
		d.Next = template.URL("/tasks?" + f.query(next))
	}
	if f.After != 0 {
		d.First = template.URL("/tasks?" + f.query(0))
	}
	v.Data = d
	p.render(w, r, http.StatusOK, "tasks.html", v)
}

// Actions a task page offers.
const (
	actReprint = "reprint"
	actRetry   = "retry"
	actCancel  = "cancel"
)

// allowed reports whether action fits t's state. The backend checks again
// (the state may change meanwhile) and its refusal is flashed.
func allowed(action string, t *spool.Task) bool {
	if t.Pruned {
		return false
	}
	switch action {
	case actReprint:
		return t.State.Terminal() || t.State == spool.StateUnknown
	case actRetry:
		return t.State == spool.StateTimedOut || t.State == spool.StateHeld || t.State == spool.StateFailed
	case actCancel:
		switch t.State {
		case spool.StateAccepted, spool.StateQueued, spool.StateRetryWait, spool.StateParked, spool.StateHeld:
			return true
		}
	}
	return false
}

// taskData is the task page and its confirmation pages.
type taskData struct {
	Task       *spool.Task
	Preview    template.HTML
	PreviewErr string
	Actions    map[string]bool
	Action     string
	Printers   []string
	// Say is the headline for a manager; Bad marks a ticket that did not
	// print.
	Say string
	Bad bool
	// Tries counts the sends; Timeline numbers them the same way.
	Tries       int
	Timeline    []timelineEntry
	TargetLabel string
	// Where says where a reprint or retry prints (the confirm page);
	// Failover names the printers whose tickets print on a backup now.
	Where    string
	Failover []string
	// DupOf is the earlier raw job a raw task's POSSIBLE DUPLICATE matched.
	DupOf *dupMatch
}

// loadTask fetches the task named in the path, answering 404 itself.
func (p *Page) loadTask(w http.ResponseWriter, r *http.Request) *spool.Task {
	no := r.PathValue("task_no")
	t, err := p.b.Task(no)
	if errors.Is(err, spool.ErrNotFound) {
		l := pickLang(r)
		p.showMessage(w, r, http.StatusNotFound, l.T("error.notfound"), message{Body: l.T("task.notfound", no), Error: true})
		return nil
	}
	if err != nil {
		p.serverError(w, r, "problem.task", err)
		return nil
	}
	return t
}

// taskPage serves GET /tasks/{task_no}.
func (p *Page) taskPage(w http.ResponseWriter, r *http.Request, sess *session) {
	t := p.loadTask(w, r)
	if t == nil {
		return
	}
	v := p.newView(r, sess, "tasks")
	v.Title = v.L.T("task.title", t.TaskNo)
	d := taskData{Task: t, Actions: map[string]bool{}, Tries: tries(t), Timeline: timeline(t), TargetLabel: targetLabel(v.L, t.State)}
	d.Say, d.Bad = taskSay(v.L, t, p.printerDetail(t.Lane()))
	d.DupOf = p.rawDupOf(t)
	for _, a := range []string{actReprint, actRetry, actCancel} {
		d.Actions[a] = allowed(a, t)
	}
	if !t.Pruned {
		html, err := p.b.Preview(t)
		if err != nil {
			d.PreviewErr = err.Error()
		} else {
			d.Preview = html
		}
	}
	v.Data = d
	p.render(w, r, http.StatusOK, "task.html", v)
}

func validAction(a string) bool { return a == actReprint || a == actRetry || a == actCancel }

// confirmPage serves GET /tasks/{task_no}/{action}: the confirmation.
func (p *Page) confirmPage(w http.ResponseWriter, r *http.Request, sess *session) {
	action := r.PathValue("action")
	if !validAction(action) {
		p.notFound(w, r)
		return
	}
	t := p.loadTask(w, r)
	if t == nil {
		return
	}
	v := p.newView(r, sess, "tasks")
	title := v.L.T("task.reprint")
	switch action {
	case actRetry:
		title = v.L.T("task.retry")
	case actCancel:
		title = v.L.T("task.cancel")
	}
	v.Title = title + " · " + t.TaskNo
	d := taskData{Task: t, Action: action, Printers: p.printerNames()}
	// Say where it prints: a printer failed over sends what it gets to
	// its backup until failback (docs/DESIGN.md, "Dispatch": failover), a reprint too.
	for _, pr := range p.b.PrinterDetails() {
		if pr.FailoverTo == "" {
			continue
		}
		d.Failover = append(d.Failover, v.L.T("confirm.failover.note", pr.Name, pr.FailoverTo, pr.Name))
		if action == actReprint && pr.Name == t.Printer {
			d.Where = v.L.T("confirm.where.failover", pr.FailoverTo, pr.Name, pr.Name)
		}
	}
	if action == actReprint && d.Where == "" {
		d.Where = v.L.T("confirm.where", t.Printer)
	}
	v.Data = d
	p.render(w, r, http.StatusOK, "confirm.html", v)
}

// taskAction serves POST /tasks/{task_no}/{action}: it does the action
// and goes to the resulting task's page with the outcome flashed.
func (p *Page) taskAction(w http.ResponseWriter, r *http.Request, sess *session) {
	action := r.PathValue("action")
	if !validAction(action) {
		p.notFound(w, r)
		return
	}
	no := r.PathValue("task_no")
	l := pickLang(r)
	back := "/tasks/" + url.PathEscape(no)
	var (
		t   *spool.Task
		err error
		ok  string
	)
	switch action {
	case actReprint:
		t, err = p.b.Reprint(r.Context(), no)
		ok = "flash.reprinted"
	case actCancel:
		t, err = p.b.Cancel(r.Context(), no)
		ok = "flash.canceled"
	case actRetry:
		printer := r.PostFormValue("printer")
		if printer != "" && !slices.Contains(p.printerNames(), printer) {
			p.flashTo(w, r, sess, back, &flash{Error: true, Text: l.T("flash.badprinter", printer)})
			return
		}
		t, err = p.b.Retry(r.Context(), no, printer)
		ok = "flash.retried"
	}
	if err != nil {
		p.log.Info("manager page: task action refused", "action", action, "task_no", no, "err", err)
		if re := (*api.RetryExists)(nil); errors.As(err, &re) {
			// A second click, or a second manager: show the version
			// that prints, instead of printing the ticket twice.
			p.flashTo(w, r, sess, "/tasks/"+url.PathEscape(re.Version), &flash{Error: true, Text: l.T("flash.retryexists", re.TaskNo, re.Version, re.State)})
			return
		}
		p.flashTo(w, r, sess, back, &flash{Error: true, Text: l.T("flash.failed", actionError(l, err))})
		return
	}
	p.log.Info("manager page: task action", "action", action, "task_no", no, "result", t.TaskNo)
	p.flashTo(w, r, sess, "/tasks/"+url.PathEscape(t.TaskNo), &flash{Text: l.T(ok, t.TaskNo)})
}

// actionError words a backend refusal for the flash.
func actionError(l lang, err error) string {
	if errors.Is(err, api.ErrConflict) || errors.Is(err, spool.ErrIllegalTransition) {
		return l.T("flash.notallowed", err.Error())
	}
	return err.Error()
}
