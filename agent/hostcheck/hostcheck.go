// Package hostcheck stands in front of every handler of the agent's local
// listener (the intake API, /healthz, /metrics and the manager page) and
// refuses the two kinds of request a browser can be tricked into sending
// (PROTOCOL.md §3 "Host check"):
//
//   - a request for a name the agent does not answer for. A web page at
//     evil.example whose name its owner points at 127.0.0.1 (DNS rebinding)
//     makes the manager's browser send its requests to the agent with
//     "Host: evil.example", and reads the answers as its own. Only the names
//     the agent is called by pass: loopback names, and on a listener open to
//     the network this computer's names and addresses, the TLS names and
//     allowed_hosts. Anything else is answered 421 Misdirected Request.
//   - a POST (or any unsafe method) that a page of another origin sent
//     (Sec-Fetch-Site other than same-origin, or an Origin that is not the
//     Host), answered 403. A request with neither header, from curl or a POS
//     library, passes as before.
package hostcheck

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"printgate/agent/api"
	"printgate/internal/warnlimit"
)

// addrsTTL is how long this computer's interface addresses are reused
// before they are read again: a DHCP lease can change them while the agent
// runs, and reading them costs a system call or two.
const addrsTTL = 30 * time.Second

// maxHostInMessage bounds how much of a refused Host is repeated in the
// answer and the log.
const maxHostInMessage = 80

// Options say which names the listener answers for.
type Options struct {
	// Addr is the listener's bound address (net.Listener.Addr). A loopback
	// address makes it loopback-only; anything else (0.0.0.0, ::, a LAN
	// address) makes it open, and this computer's names and addresses are
	// accepted too.
	Addr net.Addr
	// Names are further names and addresses accepted on either kind of
	// listener: allowed_hosts, tls_hosts and the names the listener's
	// certificate carries. Case and a trailing dot do not matter.
	Names []string
	// Logger receives one WARN line per refused request, at most a few a
	// minute per kind (the rest are counted and summarised). Nil discards.
	Logger *slog.Logger
	// Now is the clock of the log limit and of the address cache. Nil is
	// time.Now.
	Now func() time.Time
	// Hostname and InterfaceAddrs read this computer's name and addresses
	// (os.Hostname and net.InterfaceAddrs when nil); tests inject fakes.
	Hostname       func() (string, error)
	InterfaceAddrs func() ([]net.Addr, error)
}

// Guard is the http.Handler that checks every request before handing it to
// the listener's real handler.
type Guard struct {
	next   http.Handler
	open   bool
	names  map[string]bool // accepted names, normalised
	log    *slog.Logger
	now    func() time.Time
	ifaces func() ([]net.Addr, error)
	cross  *http.CrossOriginProtection
	warns  warnlimit.Limiter

	mu      sync.Mutex
	addrs   map[netip.Addr]bool // this computer's addresses (open listener)
	addrsAt time.Time
}

var _ http.Handler = (*Guard)(nil)

// New returns next behind the Host and Origin checks that o describes.
func New(next http.Handler, o Options) *Guard {
	g := &Guard{
		next:   next,
		names:  map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true},
		log:    o.Logger,
		now:    o.Now,
		ifaces: o.InterfaceAddrs,
		cross:  http.NewCrossOriginProtection(),
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.ifaces == nil {
		g.ifaces = net.InterfaceAddrs
	}
	g.warns.Now = g.now
	for _, n := range o.Names {
		if n = Normalize(n); n != "" {
			g.names[n] = true
		}
	}
	if ta, ok := o.Addr.(*net.TCPAddr); ok {
		if a, ok := netip.AddrFromSlice(ta.IP); ok && !a.Unmap().IsUnspecified() {
			// The address it is bound to is always a name for it.
			g.names[a.Unmap().WithZone("").String()] = true
		}
		g.open = !ta.IP.IsLoopback()
	}
	if g.open {
		hostname := o.Hostname
		if hostname == nil {
			hostname = os.Hostname
		}
		if h, err := hostname(); err == nil {
			for _, n := range machineNames(h) {
				g.names[n] = true
			}
		}
	}
	return g
}

// machineNames are the names this computer is called by on a LAN, from its
// host name: the name itself, its first label (a Windows PC in a domain
// reports "pos-pc.corp.lan" and is called "pos-pc"), and that label in
// .local (mDNS, Bonjour).
func machineNames(hostname string) []string {
	h := Normalize(hostname)
	if h == "" {
		return nil
	}
	short, _, _ := strings.Cut(h, ".")
	return slices.Compact([]string{h, short, short + ".local"})
}

// Normalize is a Host header value as the check compares it: no port, no
// brackets, lower case, no trailing dot, an address in its plain form (no
// zone, IPv4-mapped IPv6 as IPv4). The API's token throttle keys on it too.
func Normalize(host string) string {
	host = strings.TrimSpace(host)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap().WithZone("").String()
	}
	return host
}

// Allowed reports whether a request with this Host header value is for the
// agent. An empty Host (HTTP/1.0) passes: a browser always sends one, and
// rebinding needs the browser.
func (g *Guard) Allowed(host string) bool {
	h := Normalize(host)
	if h == "" || g.names[h] {
		return true
	}
	if !g.open {
		return false
	}
	a, err := netip.ParseAddr(h)
	return err == nil && g.ownAddr(a)
}

// ownAddr reports whether a is one of this computer's interface addresses,
// reading them again once they are addrsTTL old.
func (g *Guard) ownAddr(a netip.Addr) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now := g.now(); g.addrs == nil || now.Sub(g.addrsAt) >= addrsTTL {
		g.addrsAt = now
		g.addrs = map[netip.Addr]bool{}
		list, err := g.ifaces()
		if err != nil {
			g.log.Warn("cannot list this computer's network addresses; requests that name the agent by an address are refused unless it is in allowed_hosts", "err", err)
		}
		for _, x := range list {
			var ip net.IP
			switch v := x.(type) {
			case *net.IPNet:
				ip = v.IP
			case *net.IPAddr:
				ip = v.IP
			}
			if b, ok := netip.AddrFromSlice(ip); ok {
				g.addrs[b.Unmap()] = true
			}
		}
	}
	return g.addrs[a]
}

// ServeHTTP answers 421 to a request for a name the agent does not answer
// for, 403 to a POST a page of another origin sent, and hands every other
// request to the listener's handler.
func (g *Guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.Allowed(r.Host) {
		host := shorten(r.Host)
		g.warns.Warn(g.log, "local listener: refused a request for a host this agent does not answer for (421); if a POS calls the agent by this name, add it to allowed_hosts in the config",
			"host", host, "client", r.RemoteAddr, "method", r.Method, "path", shorten(r.URL.Path))
		// The name as allowed_hosts would list it: no port.
		refuse(w, r, http.StatusMisdirectedRequest, api.CodeMisdirected,
			fmt.Sprintf("host %q is not one this agent answers for; add it to allowed_hosts in printgate.toml if a POS calls the agent by that name", shorten(Normalize(r.Host))))
		return
	}
	if err := g.cross.Check(r); err != nil {
		g.warns.Warn(g.log, "local listener: refused a request a page of another site sent through a browser (403)",
			"origin", shorten(r.Header.Get("Origin")), "sec_fetch_site", shorten(r.Header.Get("Sec-Fetch-Site")),
			"client", r.RemoteAddr, "method", r.Method, "path", shorten(r.URL.Path))
		refuse(w, r, http.StatusForbidden, api.CodeCrossOrigin, crossOriginMessage(r))
		return
	}
	g.next.ServeHTTP(w, r)
}

// crossOriginMessage says why a cross-origin request was refused and what a
// person who meant it does instead.
func crossOriginMessage(r *http.Request) string {
	from := "a page of another site"
	if o := r.Header.Get("Origin"); o != "" {
		from = fmt.Sprintf("a page of %q", shorten(o))
	}
	return fmt.Sprintf("%s sent this %s through a browser, and the agent takes such requests only from its own pages; open the manager page itself (http://%s/) and do it there, or send the request from the POS without a browser", from, r.Method, shorten(r.Host))
}

// shorten cuts a header value a client chose to a length fit for a message.
func shorten(s string) string {
	if len(s) <= maxHostInMessage {
		return s
	}
	return s[:maxHostInMessage] + "…"
}

// refuse answers with status and msg: in the API's JSON error format on the
// API's paths, as plain text elsewhere (a person's browser).
func refuse(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	if isAPIPath(r.URL.Path) {
		h.Set("Content-Type", "application/json")
		w.WriteHeader(status)
		var body struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		body.Error.Code, body.Error.Message = code, msg
		_ = json.NewEncoder(w).Encode(body)
		return
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
}

// isAPIPath reports whether path belongs to the intake API's handler, whose
// clients read JSON errors.
func isAPIPath(path string) bool {
	return strings.HasPrefix(path, "/api/") || path == "/api" || path == "/healthz" || path == "/metrics"
}
