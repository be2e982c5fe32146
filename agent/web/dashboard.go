package web

import (
	"net/http"

	"printgate/agent/api"
)

// liveData is what the dashboard's live part shows; /?fragment=live
// renders it alone for the script to swap in.
type liveData struct {
	Printers []printerView
	Link     api.LinkInfo
	Health   api.Health
	Alerts   []alertView
	// Attention words every alert not resolved yet: what the Agent card
	// lists, so "OK" never stands alone while a ticket timed out.
	Attention []attention
}

// attention is one line of the Agent card's list, with the task it is
// about ("" for none).
type attention struct {
	Text   string
	TaskNo string
}

// printerView is a printer on the dashboard, with the sentence that says
// why it does not print and what to do ("" while it is ready).
type printerView struct {
	api.PrinterDetail
	Say string
}

func (p *Page) live(l lang) liveData {
	h := p.b.Health()
	if h.Status == "" {
		h.Status = "ok"
	}
	printers := p.b.PrinterDetails()
	d := liveData{Link: p.b.Link(), Health: h, Alerts: alertViews(l, p.alerts.list(), printers)}
	for _, pr := range printers {
		d.Printers = append(d.Printers, printerView{PrinterDetail: pr, Say: waitingSay(l, pr)})
	}
	for _, a := range d.Alerts {
		if !a.Resolved {
			d.Attention = append(d.Attention, attention{Text: a.Short(l), TaskNo: a.TaskNo})
		}
	}
	return d
}

// dashboard serves GET /: printers, the cloud link, health and alerts.
// With ?fragment=live it answers only the live part (401 when anonymous,
// since the script, not a person, reads it).
func (p *Page) dashboard(w http.ResponseWriter, r *http.Request, sess *session) {
	v := p.newView(r, sess, "dashboard")
	v.Title = v.L.T("dash.title")
	v.Data = p.live(v.L)
	if r.URL.Query().Get("fragment") != "" {
		// Leave the flash for the next full page.
		if v.Flash != nil {
			p.sessions.setFlash(sess, v.Flash)
		}
		p.renderTemplate(w, r, http.StatusOK, "dashboard.html", "live", v)
		return
	}
	p.render(w, r, http.StatusOK, "dashboard.html", v)
}

// dashboardOrFragment routes GET /: the fragment answers 401 rather than
// a redirect when anonymous.
func (p *Page) dashboardOrFragment(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("fragment") != "" {
		p.stream(p.dashboard)(w, r)
		return
	}
	p.page(p.dashboard)(w, r)
}
