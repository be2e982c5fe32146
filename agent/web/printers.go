package web

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"printgate/agent/api"
	"printgate/drivers"
	"printgate/internal/tomlq"
)

// foundView is a discovered printer with the config lines that add it.
type foundView struct {
	drivers.Found
	Config string
	// Suggested is the name the config block gives it; AddLink opens the
	// page that appends it to the config file.
	Suggested string
	AddLink   template.URL
}

// configBlock is the [[printers]] table that adds f to the config, named
// name.
func configBlock(name string, f drivers.Found) string {
	return fmt.Sprintf("[[printers]]\nname = %s\nurl = %s\n", tomlString(name), tomlString(f.URL))
}

// tomlString quotes s as a TOML basic string, as the config package
// writes it.
func tomlString(s string) string { return tomlq.Quote(s) }

// foundViews names discovered printers printer-1, printer-2... after the
// names already configured, so every block can be pasted as it is.
func foundViews(found []drivers.Found, taken []string, start int) []foundView {
	out := make([]foundView, 0, len(found))
	n := start
	for _, f := range found {
		var name string
		for {
			n++
			name = fmt.Sprintf("printer-%d", n)
			if !slices.Contains(taken, name) {
				break
			}
		}
		out = append(out, foundView{Found: f, Config: configBlock(name, f), Suggested: name, AddLink: addLink(f.URL, name)})
	}
	return out
}

// printersData is the printers page.
type printersData struct {
	Printers    []api.PrinterDetail
	Found       []foundView
	DiscoverErr string
	Scan        scanState
	ScanText    string // the scan box's line (scanText)
	ScanRanges  string // the private ranges a scan may cover
	ScanFound   []foundView
}

// printersPage serves GET /printers.
func (p *Page) printersPage(w http.ResponseWriter, r *http.Request, sess *session) {
	v := p.newView(r, sess, "printers")
	v.Title = v.L.T("printers.title")
	d := printersData{Printers: p.b.PrinterDetails()}
	names := p.printerNames()
	found, err := p.b.Discover()
	if err != nil {
		d.DiscoverErr = err.Error()
	}
	d.Found = foundViews(found, names, 0)
	d.Scan = p.scan.state()
	d.ScanText = scanText(v.L, d.Scan)
	d.ScanRanges = drivers.ScanRanges
	d.ScanFound = foundViews(d.Scan.Found, names, len(d.Found))
	v.Data = d
	p.render(w, r, http.StatusOK, "printers.html", v)
}

// testPrint serves POST /printers/{name}/test.
func (p *Page) testPrint(w http.ResponseWriter, r *http.Request, sess *session) {
	name := r.PathValue("name")
	l := pickLang(r)
	if !slices.Contains(p.printerNames(), name) {
		p.flashTo(w, r, sess, "/printers", &flash{Error: true, Text: l.T("flash.badprinter", name)})
		return
	}
	t, err := p.b.TestPrint(r.Context(), name)
	if err != nil {
		p.flashTo(w, r, sess, "/printers", &flash{Error: true, Text: l.T("flash.failed", err.Error())})
		return
	}
	p.flashTo(w, r, sess, "/printers", &flash{
		Text: l.T("flash.testqueued", name), Link: "/tasks/" + url.PathEscape(t.TaskNo), LinkText: t.TaskNo,
	})
}

// scanState is a LAN scan as the page shows it.
type scanState struct {
	Running  bool
	Finished bool
	Done     int
	Total    int
	Found    []drivers.Found
	Err      string
	// Networks names what the scan covers ("192.168.1.0/24"), "" when the
	// backend does not say.
	Networks string
	// NoPrivate: the PC has no private network, so nothing was scanned.
	NoPrivate bool
}

// scanNetworker is a backend that says which networks its scan of this
// PC's LAN covers, for the page to name them.
type scanNetworker interface {
	ScanNetworks() ([]string, error)
}

// scanner runs at most one LAN scan at a time for the page, under the
// page's context so Close stops it.
type scanner struct {
	ctx context.Context
	b   Backend
	wg  *sync.WaitGroup

	mu sync.Mutex
	st scanState
	// changed is closed (and replaced) whenever st changes, waking the
	// progress streams.
	changed chan struct{}
}

func newScanner(ctx context.Context, b Backend, wg *sync.WaitGroup) *scanner {
	return &scanner{ctx: ctx, b: b, wg: wg, changed: make(chan struct{})}
}

// start begins a scan unless one is running, and reports whether it did.
func (s *scanner) start() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.Running || s.ctx.Err() != nil {
		return false
	}
	s.st = scanState{Running: true}
	if n, ok := s.b.(scanNetworker); ok {
		nets, err := n.ScanNetworks()
		if err == nil && len(nets) == 0 {
			s.st = scanState{Finished: true, NoPrivate: true}
			s.notifyLocked()
			return true
		}
		s.st.Networks = strings.Join(nets, ", ")
	}
	s.notifyLocked()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		found, err := s.b.Scan(s.ctx, "", func(done, total int) {
			s.mu.Lock()
			s.st.Done, s.st.Total = done, total
			s.notifyLocked()
			s.mu.Unlock()
		})
		s.mu.Lock()
		defer s.mu.Unlock()
		s.st.Running, s.st.Finished, s.st.Found = false, true, found
		if err != nil {
			s.st.Err = err.Error()
		}
		s.notifyLocked()
	}()
	return true
}

func (s *scanner) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// state returns the scan's state and a channel closed at its next change.
func (s *scanner) watch() (scanState, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.Found = slices.Clone(st.Found)
	return st, s.changed
}

func (s *scanner) state() scanState {
	st, _ := s.watch()
	return st
}

// startScan serves POST /printers/scan.
func (p *Page) startScan(w http.ResponseWriter, r *http.Request, sess *session) {
	// A started scan says so in its own box, which follows it to the end;
	// a flash "Scan started." would stay on the page after it finished.
	if p.scan.start() {
		http.Redirect(w, r, "/printers#lan-scan", http.StatusSeeOther)
		return
	}
	l := pickLang(r)
	p.flashTo(w, r, sess, "/printers#lan-scan", &flash{Text: l.T("flash.scanrunning")})
}

// scanProgress and scanResult are the events of GET /printers/scan.
type scanProgress struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

type scanResult struct {
	Found []scanFoundJSON `json:"found"`
	Error string          `json:"error,omitempty"`
	Text  string          `json:"text"`
}

type scanFoundJSON struct {
	Name   string `json:"name"`
	URL    string `json:"url"`
	Model  string `json:"model,omitempty"`
	Config string `json:"config"`
	// Suggested is the name the config block gives the printer, for the
	// add link.
	Suggested string `json:"suggested"`
}

// scanStream serves GET /printers/scan: "progress" events with done and
// total while the scan runs, then one "result" event, then the end. With
// no scan started it sends the result of the last one (maybe empty).
func (p *Page) scanStream(w http.ResponseWriter, r *http.Request, _ *session) {
	s, done := p.startSSE(w, r)
	if s == nil {
		return
	}
	defer done()
	l := pickLang(r)
	last := scanProgress{-1, -1}
	for {
		st, changed := p.scan.watch()
		if !st.Running {
			res := scanResult{Error: st.Err, Found: []scanFoundJSON{}, Text: scanText(l, st)}
			names := p.printerNames()
			for _, f := range foundViews(st.Found, names, 0) {
				res.Found = append(res.Found, scanFoundJSON{Name: f.Name, URL: f.URL, Model: f.Model, Config: f.Config, Suggested: f.Suggested})
			}
			data, _ := json.Marshal(res)
			_ = s.send("result", string(data))
			return
		}
		if pr := (scanProgress{st.Done, st.Total}); pr != last {
			last = pr
			data, _ := json.Marshal(pr)
			if s.send("progress", string(data)) != nil {
				return
			}
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		case <-p.ctx.Done():
			return
		}
	}
}

// scanText is the scan box's line: what is being scanned, or what the
// scan found and where.
func scanText(l lang, st scanState) string {
	switch {
	case st.NoPrivate:
		return l.T("printers.scan.noprivate", drivers.ScanRanges)
	case st.Running && st.Networks != "":
		return l.T("printers.scan.runningon", st.Networks)
	case st.Running:
		return l.T("printers.scan.running")
	case st.Err != "":
		return l.T("printers.scan.error", st.Err)
	case st.Networks != "":
		return l.T("printers.scan.doneon", st.Networks, len(st.Found))
	}
	return l.T("printers.scan.done", len(st.Found))
}
