package cloudcheck

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"printgate/sync/link"
	"printgate/sync/wire"
)

// check builds one check's Result; its methods end it.
type check struct {
	ch    *checker
	name  string
	start time.Time
}

func (ch *checker) begin(name string) *check {
	return &check{ch: ch, name: name, start: ch.clock.Now()}
}

func (c *check) result(st Status, seen, fix string) Result {
	return Result{Name: c.name, Status: st, Seen: seen, Fix: fix, Millis: c.ch.clock.Now().Sub(c.start).Milliseconds()}
}

func (c *check) pass(format string, args ...any) Result {
	return c.result(Pass, fmt.Sprintf(format, args...), "")
}

// fail is a failure with fix, the hint for the cloud ("" when none is
// obvious).
func (c *check) fail(fix, format string, args ...any) Result {
	if c.ch.ctx != nil && c.ch.ctx.Err() != nil {
		// What was not seen after an interruption says nothing of the cloud.
		return c.result(Skip, "interrupted before the check could finish", "")
	}
	return c.result(Fail, fmt.Sprintf(format, args...), fix)
}

func (c *check) skip(format string, args ...any) Result {
	return c.result(Skip, fmt.Sprintf(format, args...), "")
}

// skipAll skips every check of names with the same reason.
func (ch *checker) skipAll(names []string, why string) []Result {
	out := make([]Result, 0, len(names))
	for _, n := range names {
		if ch.wanted(n) {
			out = append(out, ch.begin(n).skip("%s", why))
		}
	}
	return out
}

func httpClient(roots *x509.CertPool) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	tr.Proxy = nil
	return &http.Client{Transport: tr, Timeout: 15 * time.Second}
}

// handshakeResult is what a probe handshake got.
type handshakeResult struct {
	status   int    // HTTP status, 101 when upgraded
	protocol string // the subprotocol chosen
	err      error  // a failure before any HTTP answer
	conn     *websocket.Conn
}

// dial makes a handshake of its own (not the link's): with token ("" for
// none), agentID ("" for no header) and the subprotocols offered. An
// upgraded connection is returned open only when keep is set.
func (ch *checker) dial(ctx context.Context, token, agentID string, protocols []string, keep bool) handshakeResult {
	d := websocket.Dialer{
		HandshakeTimeout: 15 * time.Second, Subprotocols: protocols,
		TLSClientConfig: &tls.Config{RootCAs: ch.opts.RootCAs, MinVersion: tls.VersionTLS12},
	}
	h := http.Header{}
	if token != "" {
		h.Set(wire.HeaderAuthorization, "Bearer "+token)
	}
	if agentID != "" {
		h.Set(wire.HeaderAgent, agentID)
	}
	conn, resp, err := d.DialContext(ctx, ch.opts.CloudURL, h)
	out := handshakeResult{}
	if resp != nil {
		out.status = resp.StatusCode
		resp.Body.Close()
	}
	if err != nil {
		if resp == nil {
			out.err = err
		}
		return out
	}
	out.protocol = conn.Subprotocol()
	if keep {
		out.conn = conn
		return out
	}
	conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "cloudcheck probe"), time.Now().Add(time.Second))
	conn.Close()
	return out
}

func (h handshakeResult) String() string {
	switch {
	case h.err != nil:
		return "no answer (" + h.err.Error() + ")"
	case h.status == http.StatusSwitchingProtocols:
		return fmt.Sprintf("101 upgraded (subprotocol %q)", h.protocol)
	}
	return fmt.Sprintf("HTTP %d", h.status)
}

// refusedToken reports whether a handshake was refused the way that makes
// the agent go unpaired (401 or 403).
func (h handshakeResult) refusedToken() bool {
	return h.status == http.StatusUnauthorized || h.status == http.StatusForbidden
}

// online waits until p's link is online; false after Step.
func (ch *checker) online(ctx context.Context, p *player) bool {
	return ch.until(ctx, ch.opts.Step, p.rec, func() bool { return p.link.State() == link.StateOnline })
}

// messages returns the messages p's taps saw in direction dir whose type
// is typ ("" for any), delivered or cut.
func messages(list []seen, dir, typ string) []seen {
	var out []seen
	for _, s := range list {
		if s.dir == dir && strings.HasPrefix(s.kind, "message") && s.msg != nil && (typ == "" || s.msg.Type() == typ) {
			out = append(out, s)
		}
	}
	return out
}

// describe names a message for a sentence: its type and task_no or id.
func describe(m wire.Message) string {
	switch m := m.(type) {
	case *wire.Job:
		return "job " + m.TaskNo
	case *wire.JobAck:
		return "job_ack " + m.TaskNo
	case *wire.EventsAck:
		return "events_ack " + m.Batch
	case *wire.Events:
		return "events " + m.Batch
	case *wire.Error:
		return fmt.Sprintf("error %s (%s)", m.Code, m.Message)
	}
	return m.Type()
}

// cloudErrors describes the error frames the cloud sent, if any.
func cloudErrors(list []seen) string {
	var out []string
	for _, s := range messages(list, fromCloud, wire.TypeError) {
		out = append(out, describe(s.msg))
	}
	for _, s := range list {
		if s.dir == fromCloud && s.decodeErr != nil && strings.HasPrefix(s.kind, "message") {
			out = append(out, fmt.Sprintf("a frame the agent refuses (%v)", s.decodeErr))
		}
	}
	return strings.Join(out, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func ms(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return d.Round(100 * time.Millisecond).String()
}
