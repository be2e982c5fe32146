package web

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"printgate/agent/api"
	"printgate/spool"
)

// maxAlerts bounds the alerts kept; past it the oldest is dropped.
const maxAlerts = 200

// alert kinds.
const (
	alertPrinterDown = "printer_down"
	alertFailover    = "failover"
	alertTask        = "task"
	alertSpool       = "spool"
	alertUnpaired    = "link_unpaired"
	alertRawRefused  = "raw_refused"
	alertRawWaiting  = "raw_waiting"
	alertPINPaused   = "pin_paused"
)

// alert is something a manager should see until they acknowledge it.
type alert struct {
	// ID names the alert in /alerts/{id}/ack; a new one each time the
	// cause happens again.
	ID string
	// Key is the cause ("printer_down/kitchen", "task/T1/HELD"): one
	// alert per key.
	Key  string
	Kind string
	// Printer, TaskNo, State and Detail describe the cause.
	Printer string
	TaskNo  string
	State   string
	Detail  string
	// Code names what strains the spool in a spool alert ("refusing",
	// "write_failing", "compact_failed", "salvage_failed"; see
	// spoolCode), so the page words it in its own language.
	Code string
	// Clients and Pause describe a pin_paused alert: from how many
	// addresses the wrong PINs came, and how long sign-in is paused.
	Clients int
	Pause   time.Duration
	// First is when the cause was first seen.
	First time.Time
	// Resolved is set when the condition ended before anyone
	// acknowledged it (a printer back to READY).
	Resolved bool
}

// alertTracker turns backend state and changes into alerts. An alert stays
// until acknowledged; acknowledging removes it until its cause happens
// again (the condition starts anew, or the task enters the state again).
type alertTracker struct {
	b   Backend
	now func() time.Time
	max int

	mu     sync.Mutex
	alerts []*alert        // oldest first
	active map[string]bool // conditions holding now, by key
	seq    uint64
	// refusals numbers raw_refused alerts: each refused job is its own
	// alert, not one per printer, since each is a ticket the POS lost.
	refusals uint64
}

func newAlertTracker(b Backend, now func() time.Time, max int) *alertTracker {
	return &alertTracker{b: b, now: now, max: max, active: make(map[string]bool)}
}

// printerDown are the printer states that raise an alert.
func printerDown(state string) bool {
	switch state {
	case "OFFLINE", "ERROR", "PAPER_OUT", "COVER_OPEN":
		return true
	}
	return false
}

// taskAlert are the task states that raise an alert.
func taskAlert(s spool.State) bool {
	return s == spool.StateTimedOut || s == spool.StateHeld || s == spool.StateFailed
}

// scan reads every condition from the backend (at start, and for the
// condition kinds a change names).
func (a *alertTracker) scan() {
	a.scanPrinters()
	a.scanHealth()
	a.scanLink()
}

func (a *alertTracker) scanPrinters() {
	for _, pr := range a.b.PrinterDetails() {
		a.condition(alertPrinterDown+"/"+pr.Name, printerDown(pr.State), alert{Kind: alertPrinterDown, Printer: pr.Name, State: pr.State})
		a.condition(alertFailover+"/"+pr.Name, pr.FailoverTo != "", alert{Kind: alertFailover, Printer: pr.Name, Detail: pr.FailoverTo})
	}
}

func (a *alertTracker) scanHealth() {
	h := a.b.Health()
	bad := h.Status == "degraded" || h.Status == "failed"
	a.condition(alertSpool, bad, alert{Kind: alertSpool, State: h.Status, Detail: h.Error, Code: spoolCode(h)})
}

// spoolCode names what strains the spool in h, most urgent first, "" when
// nothing does (the alert then says h.Error as it is).
func spoolCode(h api.Health) string {
	switch {
	case h.Status == "failed":
		return ""
	case h.SalvageError != "":
		return "salvage_failed"
	case h.SpoolWriteFailing:
		return "write_failing"
	case h.SpoolRefusing:
		return "refusing"
	case h.SpoolCompactError != "" && h.Status == "degraded" && strings.HasPrefix(h.Error, "the spool could not be compacted"):
		return "compact_failed"
	}
	return ""
}

func (a *alertTracker) scanLink() {
	l := a.b.Link()
	a.condition(alertUnpaired, l.State == "unpaired", alert{Kind: alertUnpaired})
}

// apply updates the alerts for one change.
func (a *alertTracker) apply(c api.Change) {
	switch c.Kind {
	case "printer":
		a.scanPrinters()
	case "health":
		a.scanHealth()
	case "link":
		a.scanLink()
	case alertRawRefused:
		a.mu.Lock()
		a.refusals++
		key := alertRawRefused + "/" + c.Printer + "/" + strconv.FormatUint(a.refusals, 10)
		a.mu.Unlock()
		a.raise(alert{Key: key, Kind: alertRawRefused, Printer: c.Printer, Detail: c.Detail})
	case alertRawWaiting:
		a.condition(alertRawWaiting+"/"+c.Printer, c.Detail != "", alert{Kind: alertRawWaiting, Printer: c.Printer, Detail: c.Detail})
	case "task":
		if st := spool.State(c.State); taskAlert(st) {
			al := alert{Key: alertTask + "/" + c.TaskNo + "/" + c.State, Kind: alertTask, TaskNo: c.TaskNo, State: c.State, Printer: c.Printer}
			// The reason makes the sentence ("printer bar was out of
			// paper"); a task gone meanwhile is still worth the alert.
			if t, err := a.b.Task(c.TaskNo); err == nil && t.State == st {
				al.Detail, al.Printer = t.Reason, t.Lane()
			}
			a.raise(al)
		}
	}
}

// pinPaused raises the alert that the shared PIN budget tripped, or, while
// it is still shown, updates it to the latest trip: one alert however
// often the guesser comes back, until someone acknowledges it.
func (a *alertTracker) pinPaused(clients int, pause time.Duration) {
	a.mu.Lock()
	if i := a.find(alertPINPaused); i >= 0 {
		a.alerts[i].Clients, a.alerts[i].Pause, a.alerts[i].Resolved = clients, pause, false
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	a.raise(alert{Key: alertPINPaused, Kind: alertPINPaused, Clients: clients, Pause: pause})
}

// condition records whether the condition key holds now: one that starts
// holding raises al; one that stops marks its alert resolved.
func (a *alertTracker) condition(key string, holds bool, al alert) {
	a.mu.Lock()
	was := a.active[key]
	if holds {
		a.active[key] = true
	} else {
		delete(a.active, key)
	}
	if !holds {
		if i := a.find(key); i >= 0 {
			a.alerts[i].Resolved = true
		}
	}
	a.mu.Unlock()
	if holds && !was {
		al.Key = key
		a.raise(al)
	} else if holds {
		// Still holding: refresh what the alert says (a printer that went
		// from PAPER_OUT to OFFLINE) without a new first-seen time.
		a.mu.Lock()
		if i := a.find(key); i >= 0 {
			a.alerts[i].State, a.alerts[i].Detail, a.alerts[i].Code = al.State, al.Detail, al.Code
		}
		a.mu.Unlock()
	}
}

// raise adds al unless an alert with its key is already shown.
func (a *alertTracker) raise(al alert) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i := a.find(al.Key); i >= 0 {
		a.alerts[i].Resolved = false
		return
	}
	a.seq++
	al.ID = strconv.FormatUint(a.seq, 10)
	al.First = a.now()
	if len(a.alerts) >= a.max {
		a.alerts = slices.Delete(a.alerts, 0, len(a.alerts)-a.max+1)
	}
	a.alerts = append(a.alerts, &al)
}

func (a *alertTracker) find(key string) int {
	return slices.IndexFunc(a.alerts, func(x *alert) bool { return x.Key == key })
}

// ack removes the alert id and reports whether there was one.
func (a *alertTracker) ack(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	i := slices.IndexFunc(a.alerts, func(x *alert) bool { return x.ID == id })
	if i < 0 {
		return false
	}
	a.alerts = slices.Delete(a.alerts, i, i+1)
	return true
}

// list returns copies of the alerts, newest first.
func (a *alertTracker) list() []alert {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]alert, 0, len(a.alerts))
	for i := len(a.alerts) - 1; i >= 0; i-- {
		out = append(out, *a.alerts[i])
	}
	return out
}

// Text is the alert in l.
func (al alert) Text(l lang) string {
	switch al.Kind {
	case alertPrinterDown:
		return l.T("alert.printer_down", al.Printer, l.State(al.State))
	case alertFailover:
		return l.T("alert.failover", al.Printer, al.Detail)
	case alertTask:
		t := &spool.Task{TaskNo: al.TaskNo, State: spool.State(al.State), Reason: al.Detail, Printer: al.Printer}
		switch t.State {
		case spool.StateTimedOut:
			return l.T("alert.task.TIMED_OUT", al.TaskNo, whyNot(l, t))
		case spool.StateFailed:
			return l.T("alert.task.FAILED", al.TaskNo, whyNot(l, t))
		case spool.StateHeld:
			return l.T("alert.task.HELD", al.TaskNo)
		}
		return l.T("alert.task", al.TaskNo, l.State(al.State))
	case alertSpool:
		switch al.Code {
		case "refusing":
			return l.T("alert.spool.refusing", al.Detail)
		case "write_failing":
			return l.T("alert.spool.write_failing", al.Detail)
		case "compact_failed":
			return l.T("alert.spool.compact_failed", al.Detail)
		case "salvage_failed":
			return l.T("alert.spool.salvage_failed", al.Detail)
		}
		detail := al.Detail
		if detail == "" {
			detail = l.State(al.State)
		}
		return l.T("alert.spool", l.State(al.State), detail)
	case alertUnpaired:
		return l.T("alert.link_unpaired")
	case alertRawRefused:
		return l.T("alert.raw_refused", al.Printer, al.Detail)
	case alertRawWaiting:
		return l.T("alert.raw_waiting", al.Printer, al.Detail)
	case alertPINPaused:
		return l.T("alert.pin_paused", al.Clients, duration(l, al.Pause))
	}
	return al.Key
}

func (p *Page) ackAlert(w http.ResponseWriter, r *http.Request, sess *session) {
	p.alerts.ack(r.PathValue("id"))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// alertView is an alert with its sentence in the page's language.
type alertView struct {
	alert
	Say string
}

// Short is the alert in a few words, for the Agent card's list of what
// needs attention (the alerts card has the whole sentence).
func (al alert) Short(l lang) string {
	switch {
	case al.Kind == alertTask && al.State == string(spool.StateHeld):
		return l.T("attn.held", al.TaskNo)
	case al.Kind == alertTask:
		return l.T("attn.task", al.TaskNo, l.State(al.State))
	case al.Kind == alertPINPaused:
		return l.T("attn.pin_paused")
	case al.Kind == alertFailover:
		return l.T("attn.failover", al.Printer, al.Detail)
	case al.Kind == alertRawRefused:
		return l.T("attn.raw_refused", al.Printer)
	case al.Kind == alertRawWaiting:
		return l.T("attn.raw_waiting", al.Printer)
	}
	return al.Text(l)
}

// alertViews words alerts in l; a printer that is still down is told
// from its state now (how many tickets wait, whether its backup took
// over), with what to do.
func alertViews(l lang, alerts []alert, printers []api.PrinterDetail) []alertView {
	out := make([]alertView, len(alerts))
	for i, al := range alerts {
		out[i] = alertView{alert: al, Say: al.Text(l)}
		if al.Kind != alertPrinterDown || al.Resolved {
			continue
		}
		for _, pr := range printers {
			if pr.Name == al.Printer && printerDown(pr.State) {
				out[i].Say = waitingSay(l, pr)
			}
		}
	}
	return out
}
