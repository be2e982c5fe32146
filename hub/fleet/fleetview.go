package fleet

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"printgate/hub/agentlink"
	"printgate/hub/api"
	"printgate/hub/store"
	"printgate/sync/wire"
	"printgate/taskdef"
)

// Bounds of the fleet view.
const (
	// viewTTL is how long a tenant's fleet is reused: the page polls
	// every refreshSeconds, so a state change shows within both.
	viewTTL = 3 * time.Second
	// RefreshSeconds is how often the page's script asks for the fleet.
	RefreshSeconds = 5
	// maxAttention bounds the jobs that need someone read per store.
	maxAttention = 50
	// maxViews bounds the tenants whose fleet is cached.
	maxViews = 256
)

// attentionStates are the states of a job that needs someone: it did not
// print, or nobody knows whether it did (docs/STATES.md, docs/HUB.md).
var attentionStates = []string{
	string(taskdef.StateTimedOut), string(taskdef.StateUnknown), string(taskdef.StateHeld),
	string(taskdef.StateFailed), store.StateRejected, store.StateExpired,
}

// movingStates are the states in which a job that failed over to another
// printer (target is not its printer) is shown too: someone should know
// it comes out elsewhere.
var movingStates = []string{
	string(taskdef.StateQueued), string(taskdef.StateSending), string(taskdef.StateRetryWait),
	string(taskdef.StateParked), string(taskdef.StatePrinted),
}

// storeCard is one store on the fleet page.
type storeCard struct {
	store.StoreInfo
	agentlink.AgentStatus
	Known     bool // an agent of the store connected to this node since it started
	Backlog   int
	Attention []store.Task
}

// fleetData is a tenant's fleet.
type fleetData struct {
	Stores  []storeCard
	Online  int
	Refresh int
}

// viewCache holds recent fleets by tenant.
type viewCache struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]cachedView
}

type cachedView struct {
	at time.Time
	d  fleetData
}

// needsSomeone reports whether t is shown in red.
func needsSomeone(t store.Task) bool {
	if slices.Contains(attentionStates, t.State) {
		return true
	}
	return t.Target != "" && t.Printer != "" && t.Target != t.Printer && t.State != string(taskdef.StatePrinted)
}

// fleet returns the tenant's stores with their agents and the jobs that
// need someone, from the cache when it is fresh.
func (p *Page) fleet(ctx context.Context, tenant string) (fleetData, error) {
	now := p.now()
	p.views.mu.Lock()
	if c, ok := p.views.m[tenant]; ok && now.Sub(c.at) < viewTTL {
		p.views.mu.Unlock()
		return c.d, nil
	}
	p.views.mu.Unlock()
	stores, err := p.st.Stores(ctx, tenant)
	if err != nil {
		return fleetData{}, err
	}
	d := fleetData{Refresh: RefreshSeconds}
	for _, st := range stores {
		c := storeCard{StoreInfo: st}
		if p.opts.Link != nil {
			c.AgentStatus, c.Known = p.opts.Link.Status(st.ID)
		}
		if c.Online {
			d.Online++
		}
		pending, err := p.st.Pending(ctx, st.ID)
		if err != nil {
			return fleetData{}, err
		}
		c.Backlog = len(pending)
		if c.Attention, err = p.attention(ctx, st.ID); err != nil {
			return fleetData{}, err
		}
		d.Stores = append(d.Stores, c)
	}
	p.views.mu.Lock()
	if p.views.m == nil || len(p.views.m) >= maxViews {
		p.views.m = map[string]cachedView{}
	}
	p.views.m[tenant] = cachedView{at: now, d: d}
	p.views.mu.Unlock()
	return d, nil
}

func (p *Page) fleetPage(w http.ResponseWriter, r *http.Request, sess *session) {
	d, err := p.fleet(r.Context(), sess.tenant)
	if err != nil {
		p.serverError(w, r, sess, "what.fleet", err)
		return
	}
	v := p.newView(r, sess)
	v.Title = v.L.T("fleet.title")
	v.Data = d
	p.render(w, http.StatusOK, "fleet.html", "layout", v)
}

// fleetFragment is the stores' part of the fleet page, which its script
// fetches every RefreshSeconds and puts in place.
func (p *Page) fleetFragment(w http.ResponseWriter, r *http.Request, sess *session) {
	d, err := p.fleet(r.Context(), sess.tenant)
	if err != nil {
		p.log.Error("fleet page: read the fleet", "err", err)
		plain(w, http.StatusServiceUnavailable, "the hub cannot read the fleet now; the page tries again")
		return
	}
	v := p.newView(r, sess)
	v.Data = d
	p.render(w, http.StatusOK, "fleet.html", "stores", v)
}

// tenantStore returns the store id of the session's tenant; another
// tenant's store is store.ErrNotFound, as one that does not exist.
func (p *Page) tenantStore(ctx context.Context, sess *session, id string) (store.StoreInfo, error) {
	if store.ValidID(id) != nil {
		return store.StoreInfo{}, store.ErrNotFound
	}
	st, err := p.st.StoreInfo(ctx, id)
	if err == nil && st.Tenant != sess.tenant {
		return store.StoreInfo{}, store.ErrNotFound
	}
	return st, err
}

// jobData is the job page's content.
type jobData struct {
	Store   store.StoreInfo
	Task    store.Task
	Red     bool
	Online  bool
	ID      string // the idempotency id of the buttons' command
	Reprint string
	Cancel  string
}

func (p *Page) jobPage(w http.ResponseWriter, r *http.Request, sess *session) {
	ctx := r.Context()
	st, err := p.tenantStore(ctx, sess, r.PathValue("store"))
	var t store.Task
	if err == nil {
		no := r.PathValue("task_no")
		if store.ValidTaskNo(no) != nil {
			err = store.ErrNotFound
		} else {
			t, err = p.st.Task(ctx, st.ID, no)
		}
	}
	if errors.Is(err, store.ErrNotFound) {
		p.notFound(w, r)
		return
	}
	if err != nil {
		p.serverError(w, r, sess, "what.job", err)
		return
	}
	t.Job = nil
	d := jobData{Store: st, Task: t, Red: needsSomeone(t), ID: "fleet-" + randomToken()[:22]}
	if p.opts.Link != nil {
		s, _ := p.opts.Link.Status(st.ID)
		d.Online = s.Online
	}
	base := fmt.Sprintf("%s/stores/%s/jobs/%s", Prefix, st.ID, t.TaskNo)
	d.Reprint, d.Cancel = base+"/reprint", base+"/cancel"
	v := p.newView(r, sess)
	v.Title = t.TaskNo
	v.Data = d
	p.render(w, http.StatusOK, "job.html", "layout", v)
}

// jobAction reprints or cancels a job through the order API's path, under
// the id the job page made (a resubmitted form is the same command).
func (p *Page) jobAction(w http.ResponseWriter, r *http.Request, sess *session) {
	ctx := r.Context()
	l := pickLang(r)
	typ := map[string]string{"reprint": wire.TypeReprint, "cancel": wire.TypeCancel}[r.PathValue("action")]
	st, err := p.tenantStore(ctx, sess, r.PathValue("store"))
	no := r.PathValue("task_no")
	if err == nil && (typ == "" || store.ValidTaskNo(no) != nil) {
		err = store.ErrNotFound
	}
	if err == nil {
		_, err = p.st.Task(ctx, st.ID, no)
	}
	if errors.Is(err, store.ErrNotFound) {
		p.notFound(w, r)
		return
	}
	if err != nil {
		p.serverError(w, r, sess, "what.command", err)
		return
	}
	id := r.PostFormValue("id")
	if store.ValidTaskNo(id) != nil {
		id = "fleet-" + randomToken()[:22]
	}
	back := fmt.Sprintf("%s/stores/%s/jobs/%s", Prefix, st.ID, no)
	c, outcome, err := p.opts.Actions.Command(ctx, st, typ, no, id)
	if err != nil {
		p.serverError(w, r, sess, "what.command", err)
		return
	}
	verb := l.T("action." + r.PathValue("action"))
	f := &flash{Text: l.T("command.sent", verb)}
	switch outcome {
	case api.CommandAnswered:
		f.Text = l.T("command.answered", verb)
		if c.Result != nil && !c.Result.OK {
			f.Error, f.Text = true, l.T("command.failed", verb, resultMessage(c.Result))
		}
	case api.CommandNotConnected:
		f.Error, f.Text = true, l.T("command.offline", verb)
	case api.CommandConflict:
		f.Error, f.Text = true, l.T("command.conflict")
	}
	p.log.Info("fleet page: command", "tenant", sess.tenant, "user", sess.user, "store", st.ID, "task_no", no, "type", typ, "id", id)
	p.flashTo(w, r, sess, back, f)
}

// resultMessage is what the agent said of a command that failed.
func resultMessage(r *wire.CommandResult) string {
	if r.Error != nil {
		return r.Error.Message
	}
	return ""
}
