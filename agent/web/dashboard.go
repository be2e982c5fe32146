package web

import (
	"net/http"

	"printgate/agent/api"
)

// liveData is what the dashboard's live part shows; /?fragment=live
// renders it alone for the script to swap in.
type liveData struct {
	Printers []api.PrinterDetail
	Link     api.LinkInfo
	Health   api.Health
	Alerts   []alert
}

func (p *Page) live() liveData {
	h := p.b.Health()
	if h.Status == "" {
		h.Status = "ok"
	}
	return liveData{Printers: p.b.PrinterDetails(), Link: p.b.Link(), Health: h, Alerts: p.alerts.list()}
}

// dashboard serves GET /: printers, the cloud link, health and alerts.
// With ?fragment=live it answers only the live part (401 when anonymous,
// since the script, not a person, reads it).
func (p *Page) dashboard(w http.ResponseWriter, r *http.Request, sess *session) {
	v := p.newView(r, sess, "dashboard")
	v.Title = v.L.T("dash.title")
	v.Data = p.live()
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
