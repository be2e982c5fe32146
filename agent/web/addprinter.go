package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"html/template"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"printgate/agent/api"
	"printgate/agent/config"
	"printgate/agent/localapi"
	"printgate/drivers"
)

// validPrinterName is the rule config.AppendPrinter enforces; the form
// checks it first so a typo comes back with the form, not a file error.
var validPrinterName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// appendedBlock is the text config.AppendPrinter writes after the file's
// last line, shown on the add page so the manager sees exactly what the
// file will gain.
func appendedBlock(name, url string) string {
	return config.PrinterBlock(name, url)
}

// addLink is the add page's address for a discovered printer, with name
// suggested.
func addLink(rawURL, name string) template.URL {
	q := url.Values{"url": {rawURL}, "name": {name}}
	// url.Values.Encode escapes every value, so the result is a safe URL.
	return template.URL("/printers/add?" + q.Encode())
}

// fileSum is the SHA-256 of a config file's text, hex, as the add form
// carries it.
func fileSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// configConfirmData is the reload and add confirmation pages.
type configConfirmData struct {
	Action string // "reload" or "add"
	Config string // the config file's path
	Name   string
	URL    string
	Block  string
	Sum    string
	CanRun bool   // the backend can reload its config
	Tested string // what the test of a printer typed by its address found
}

// printerProber is a backend that tests one printer's address (IP:port)
// before the page adds it: a connection and the ESC/POS status query.
type printerProber interface {
	ProbePrinter(ctx context.Context, addr string) (drivers.Found, error)
}

// probeWait bounds the test of a printer typed by its address.
const probeWait = 5 * time.Second

// testAddress serves POST /printers/test-address: the manager typed a
// network printer's address; it is tested first (on a private network or
// this PC only, as a scan), and only a printer that accepts the connection
// goes on to the add form, which says what the test found.
func (p *Page) testAddress(w http.ResponseWriter, r *http.Request, sess *session) {
	l := pickLang(r)
	back := "/printers#add-address"
	if p.opts.ConfigPath == "" {
		p.flashTo(w, r, sess, back, &flash{Error: true, Text: l.T("add.unavailable")})
		return
	}
	prober, ok := p.b.(printerProber)
	if !ok {
		p.flashTo(w, r, sess, back, &flash{Error: true, Text: l.T("add.notest")})
		return
	}
	raw := strings.TrimSpace(r.PostFormValue("addr"))
	ap, err := netip.ParseAddrPort(raw)
	if err != nil {
		a, aerr := netip.ParseAddr(raw)
		if aerr != nil || a.Zone() != "" {
			p.flashTo(w, r, sess, back, &flash{Error: true, Text: l.T("add.badaddr", raw)})
			return
		}
		ap = netip.AddrPortFrom(a, drivers.DefaultTCPPort)
	}
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	if !drivers.ScanAllowed(netip.PrefixFrom(ap.Addr(), ap.Addr().BitLen())) {
		p.flashTo(w, r, sess, back, &flash{Error: true, Text: l.T("add.notprivate", ap.Addr().String(), drivers.ScanRanges)})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), probeWait)
	defer cancel()
	found, err := prober.ProbePrinter(ctx, ap.String())
	if err != nil {
		p.log.Info("manager page: printer address test failed", "addr", ap.String(), "err", err)
		p.flashTo(w, r, sess, back, &flash{Error: true, Text: l.T("add.noanswer", ap.String())})
		return
	}
	data, err := os.ReadFile(p.opts.ConfigPath)
	if err != nil {
		p.serverError(w, r, "problem.config.read", err)
		return
	}
	fv := foundViews([]drivers.Found{found}, p.printerNames(), 0)[0]
	tested := l.T("add.tested", ap.String())
	if !found.Answers {
		tested = l.T("add.tested.silent", ap.String())
	}
	v := p.newView(r, sess, "printers")
	v.Title = l.T("add.title")
	v.Data = configConfirmData{Action: "add", Config: p.opts.ConfigPath, Name: fv.Suggested, URL: found.URL,
		Block: appendedBlock(fv.Suggested, found.URL), Sum: fileSum(data), Tested: tested}
	p.render(w, r, http.StatusOK, "config-confirm.html", v)
}

// reloadConfirm serves GET /printers/reload.
func (p *Page) reloadConfirm(w http.ResponseWriter, r *http.Request, sess *session) {
	v := p.newView(r, sess, "printers")
	v.Title = v.L.T("reload.title")
	_, can := p.b.(localapi.Reloader)
	v.Data = configConfirmData{Action: "reload", Config: p.opts.ConfigPath, CanRun: can}
	p.render(w, r, http.StatusOK, "config-confirm.html", v)
}

// reloadAction serves POST /printers/reload: it reloads the config and
// flashes what changed, or the config's errors.
func (p *Page) reloadAction(w http.ResponseWriter, r *http.Request, sess *session) {
	l := pickLang(r)
	rl, ok := p.b.(localapi.Reloader)
	if !ok {
		p.flashTo(w, r, sess, "/printers", &flash{Error: true, Text: l.T("flash.reload.unsupported")})
		return
	}
	res, err := rl.Reload(r.Context())
	if err != nil {
		p.log.Info("manager page: config reload refused", "err", err)
		p.flashTo(w, r, sess, "/printers", reloadRefused(l, l.T("flash.reload.refused"), res, err))
		return
	}
	p.log.Info("manager page: config reloaded", "added", res.Added, "changed", res.Changed, "removed", res.Removed, "restart_needed", res.RestartNeeded)
	f := &flash{Text: l.T("flash.reloaded"), Lines: reloadLines(l, res)}
	if len(f.Lines) == 0 {
		f.Text = l.T("flash.reload.nothing")
	}
	p.flashTo(w, r, sess, "/printers", f)
}

// reloadRefused is the flash of a failed reload: text, then the config's
// errors one per line ("file:line: msg"), or the error itself.
func reloadRefused(l lang, text string, res api.ReloadResult, err error) *flash {
	f := &flash{Error: true, Text: text, Lines: res.Errors}
	if !errors.Is(err, api.ErrConfigRefused) {
		f.Text = l.T("flash.failed", err.Error())
		f.Lines = nil
	} else if len(f.Lines) == 0 {
		f.Lines = strings.Split(err.Error(), "\n")
	}
	return f
}

// reloadLines words what a reload did, one line per kind of change.
func reloadLines(l lang, res api.ReloadResult) []string {
	var out []string
	for _, c := range []struct {
		id    string
		names []string
	}{
		{"flash.reload.added", res.Added},
		{"flash.reload.changed", res.Changed},
		{"flash.reload.removed", res.Removed},
		{"flash.reload.restart", res.RestartNeeded},
	} {
		if len(c.names) > 0 {
			out = append(out, l.T(c.id, strings.Join(c.names, ", ")))
		}
	}
	return append(out, res.Notes...)
}

// addConfirm serves GET /printers/add?url=&name=: the form that appends
// a discovered printer to the config file. It carries the SHA-256 of the
// file as read now, so a change made before the submit is noticed.
func (p *Page) addConfirm(w http.ResponseWriter, r *http.Request, sess *session) {
	l := pickLang(r)
	if p.opts.ConfigPath == "" {
		p.showMessage(w, r, http.StatusOK, l.T("add.title"), message{Body: l.T("add.unavailable")})
		return
	}
	q := r.URL.Query()
	u := strings.TrimSpace(q.Get("url"))
	if u == "" {
		p.showMessage(w, r, http.StatusBadRequest, l.T("add.title"), message{Body: l.T("add.nourl"), Error: true})
		return
	}
	data, err := os.ReadFile(p.opts.ConfigPath)
	if err != nil {
		p.serverError(w, r, "problem.config.read", err)
		return
	}
	name := q.Get("name")
	v := p.newView(r, sess, "printers")
	v.Title = l.T("add.title")
	v.Data = configConfirmData{Action: "add", Config: p.opts.ConfigPath, Name: name, URL: u, Block: appendedBlock(name, u), Sum: fileSum(data)}
	p.render(w, r, http.StatusOK, "config-confirm.html", v)
}

// addAction serves POST /printers/add: it appends the printer to the
// config file unless the file changed since the form was shown, then
// reloads the config so the printer starts.
func (p *Page) addAction(w http.ResponseWriter, r *http.Request, sess *session) {
	l := pickLang(r)
	if p.opts.ConfigPath == "" {
		p.flashTo(w, r, sess, "/printers", &flash{Error: true, Text: l.T("add.unavailable")})
		return
	}
	name := strings.TrimSpace(r.PostFormValue("name"))
	u := strings.TrimSpace(r.PostFormValue("url"))
	back := string(addLink(u, name))
	if u == "" {
		p.flashTo(w, r, sess, "/printers", &flash{Error: true, Text: l.T("add.nourl")})
		return
	}
	if !validPrinterName.MatchString(name) {
		p.flashTo(w, r, sess, back, &flash{Error: true, Text: l.T("flash.add.badname", name)})
		return
	}
	data, err := os.ReadFile(p.opts.ConfigPath)
	if err != nil {
		p.flashTo(w, r, sess, "/printers", &flash{Error: true, Text: l.T("flash.failed", err.Error())})
		return
	}
	sum := fileSum(data)
	if subtle.ConstantTimeCompare([]byte(sum), []byte(r.PostFormValue("sum"))) != 1 {
		p.flashTo(w, r, sess, back, &flash{Error: true, Text: l.T("flash.add.changed")})
		return
	}
	// data is what the form was built from (the sums match): a write
	// made from here on is refused by AppendPrinter, not overwritten.
	if _, err := config.AppendPrinter(p.opts.ConfigPath, name, u, bytes.Clone(data)); err != nil {
		p.log.Info("manager page: add printer refused", "name", name, "url", u, "err", err)
		if errors.Is(err, config.ErrFileChanged) {
			p.flashTo(w, r, sess, back, &flash{Error: true, Text: l.T("flash.add.changed")})
			return
		}
		p.flashTo(w, r, sess, back, &flash{Error: true, Text: l.T("flash.add.refused", name), Lines: errorLines(err)})
		return
	}
	p.log.Info("manager page: printer added to the config", "name", name, "url", u, "config", p.opts.ConfigPath)
	rl, ok := p.b.(localapi.Reloader)
	if !ok {
		p.flashTo(w, r, sess, "/printers", &flash{Text: l.T("flash.add.restart", name)})
		return
	}
	res, err := rl.Reload(r.Context())
	if err != nil {
		p.log.Info("manager page: config reload after add refused", "err", err)
		p.flashTo(w, r, sess, "/printers", reloadRefused(l, l.T("flash.add.notloaded", name), res, err))
		return
	}
	p.flashTo(w, r, sess, "/printers", &flash{Text: l.T("flash.add.done", name), Lines: reloadLines(l, res)})
}

// errorLines splits a config error into its "file:line: msg" lines.
func errorLines(err error) []string {
	var es config.Errors
	if errors.As(err, &es) {
		out := make([]string, len(es))
		for i, e := range es {
			out[i] = e.Error()
		}
		return out
	}
	return strings.Split(err.Error(), "\n")
}
