package cloudcheck

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"printgate/sync/wire"
)

var handshakeNames = []string{"handshake.subprotocol", "handshake.token", "handshake.welcome", "handshake.ping"}

// pongWithin is how soon the cloud must answer the agent's ping: well
// inside the silence timeout, so a slow pong never looks like a dead link.
const pongWithin = 10 * time.Second

// handshake checks §5's handshake with probes of its own, then connects a
// played agent and watches one idle connection for pings.
func (ch *checker) handshake(ctx context.Context) []Result {
	p, tok, err := ch.agent(ctx, "handshake")
	if err != nil {
		return ch.skipAll(handshakeNames, err.Error())
	}
	defer p.close()
	if h := ch.dial(ctx, tok, p.id, []string{wire.Subprotocol}, false); h.err != nil {
		why := fmt.Sprintf("the cloud did not answer at %s: %v", ch.opts.CloudURL, h.err)
		ch.setOffline("the cloud did not answer (see handshake.subprotocol)")
		out := []Result{}
		if ch.wanted("handshake.subprotocol") {
			out = append(out, ch.begin("handshake.subprotocol").fail("check --cloud: the agent websocket URL, as in the agent's [cloud] url, reachable from this machine", "%s", why))
		}
		return append(out, ch.skipAll(handshakeNames[1:], "the cloud did not answer (see handshake.subprotocol)")...)
	}
	var out []Result
	if ch.wanted("handshake.subprotocol") {
		out = append(out, ch.checkSubprotocol(ctx, tok, p.id))
	}
	if ch.wanted("handshake.token") {
		out = append(out, ch.checkToken(ctx, tok, p.id))
	}
	if ch.wanted("handshake.welcome") || ch.wanted("handshake.ping") {
		out = append(out, ch.checkWelcome(ctx, p, tok)...)
		if !ch.online(ctx, p) {
			ch.setOffline("the agent never got online (see handshake.welcome)")
		}
	}
	return out
}

func (ch *checker) checkSubprotocol(ctx context.Context, tok, agentID string) Result {
	c := ch.begin("handshake.subprotocol")
	good := ch.dial(ctx, tok, agentID, []string{wire.Subprotocol}, false)
	if good.status != http.StatusSwitchingProtocols || good.protocol != wire.Subprotocol {
		return c.fail("select Sec-WebSocket-Protocol: "+wire.Subprotocol+" when the agent offers it; the agent closes a connection without it",
			"a handshake offering %s with a valid device token got %s", wire.Subprotocol, good)
	}
	other := ch.dial(ctx, tok, agentID, []string{"printgate.v0-cloudcheck"}, false)
	note := "a handshake offering only another subprotocol got " + other.String()
	if other.status == http.StatusSwitchingProtocols {
		note += " (accepted: an agent of another protocol version would be taken for this one)"
	}
	return c.pass("the cloud selected %s; %s", wire.Subprotocol, note)
}

func (ch *checker) checkToken(ctx context.Context, tok, agentID string) Result {
	c := ch.begin("handshake.token")
	none := ch.dial(ctx, "", agentID, []string{wire.Subprotocol}, false)
	bad := ch.dial(ctx, "cloudcheck-not-a-token-"+agentID, agentID, []string{wire.Subprotocol}, false)
	good := ch.dial(ctx, tok, agentID, []string{wire.Subprotocol}, false)
	noAgent := ch.dial(ctx, tok, "", []string{wire.Subprotocol}, false)
	seen := fmt.Sprintf("no token: %s; an unknown token: %s; the agent's token: %s; no %s header: %s",
		none, bad, good, wire.HeaderAgent, noAgent)
	switch {
	case none.status == http.StatusSwitchingProtocols:
		return c.fail("refuse a handshake without a device token (HTTP 401): anyone could connect as any agent", "%s", seen)
	case !bad.refusedToken():
		return c.fail("refuse a handshake with an unknown or revoked device token with HTTP 401 (or 403) before the upgrade: the agent then goes unpaired instead of reconnecting with a token that cannot work", "%s", seen)
	case good.status != http.StatusSwitchingProtocols:
		return c.fail("accept the device token the cloud issued, sent as Authorization: Bearer <token>", "%s", seen)
	}
	return c.pass("%s", seen)
}

// checkWelcome connects the played agent (with a job queued before, when
// the test API can queue one, so a cloud that pushes it early shows it)
// and checks that welcome is the first frame, then watches pings.
func (ch *checker) checkWelcome(ctx context.Context, p *player, tok string) []Result {
	c := ch.begin("handshake.welcome")
	queued := ""
	if ch.api != nil {
		j := wire.Job{TaskNo: p.id + "_early_v1", Printer: printerName, Payload: []byte("cloudcheck early job\n")}
		if err := ch.api.queue(ctx, p.id, j); err != nil {
			return []Result{c.fail("", "queueing a job for the agent before it connects failed: %v", err), ch.begin("handshake.ping").skip("the agent was not connected")}
		}
		queued = j.TaskNo
	}
	start := ch.clock.Now()
	p.start(tok)
	var first seen
	got := ch.until(ctx, ch.opts.Step, p.rec, func() bool {
		for _, s := range p.rec.snapshot() {
			if s.dir == fromCloud && strings.HasPrefix(s.kind, "message") {
				first = s
				return true
			}
		}
		return false
	})
	hs := "none answered"
	for _, s := range p.rec.snapshot() {
		if s.kind == "handshake" {
			hs = fmt.Sprintf("HTTP %d", s.status)
			break
		}
	}
	var res []Result
	switch {
	case !got:
		res = append(res, c.fail("answer the agent's hello with {\"type\":\"welcome\",\"store_id\":...,\"server_time\":...}",
			"no frame from the cloud within %v of connecting (handshake: %s)", ch.opts.Step, hs))
	case first.msg == nil:
		res = append(res, c.fail("send welcome as §5 defines it: one JSON object, store_id and server_time (RFC 3339)",
			"the first frame does not decode: %v: %.200s", first.decodeErr, first.raw))
	case first.msg.Type() != wire.TypeWelcome:
		res = append(res, c.fail("send welcome first, as the answer to hello: queued jobs, commands and acks go after it",
			"the first frame from the cloud was %s, not welcome", describe(first.msg)))
	default:
		w := first.msg.(*wire.Welcome)
		skew := w.ServerTime.Sub(ch.clock.Now())
		if skew < 0 {
			skew = -skew
		}
		seen := fmt.Sprintf("welcome (store_id %q) %s after the connection opened, server_time %s off", w.StoreID, ms(first.at.Sub(start)), ms(skew))
		if queued != "" {
			var ack *wire.JobAck
			ch.until(ctx, ch.opts.Step, p.rec, func() bool {
				for _, s := range messages(p.rec.snapshot(), toCloud, wire.TypeJobAck) {
					if a := s.msg.(*wire.JobAck); a.TaskNo == queued {
						ack = a
						return true
					}
				}
				return false
			})
			if ack == nil {
				res = append(res, c.fail("push the jobs queued for an agent once it is welcomed",
					"%s; but the job queued before the agent connected (%s) did not arrive within %v", seen, queued, ch.opts.Step))
				break
			}
			seen += "; the job queued before it connected came after welcome and was acknowledged " + ack.Result
		}
		if skew > 5*time.Minute {
			res = append(res, c.fail("put the cloud's current UTC time in server_time", "%s: more than 5 min", seen))
			break
		}
		res = append(res, c.pass("%s", seen))
	}
	if ch.wanted("handshake.ping") {
		res = append(res, ch.checkPing(ctx, p))
	}
	return res
}

// checkPing watches the played agent's connection for PingWait: every
// agent ping must get its pong, the cloud must ping too, and the
// connection must stay up.
func (ch *checker) checkPing(ctx context.Context, p *player) Result {
	c := ch.begin("handshake.ping")
	if !ch.online(ctx, p) {
		return c.skip("the agent never got online (see handshake.welcome)")
	}
	conn := p.rec.snapshot()
	connID := 0
	for _, s := range conn {
		if s.kind == "handshake" {
			connID = s.conn
		}
	}
	from := ch.clock.Now()
	ch.sleep(ctx, ch.opts.PingWait)
	var pings, cloudPings []time.Time
	var pongs []time.Time
	dropped := false
	for _, s := range p.rec.snapshot() {
		if s.conn != connID {
			if s.conn > connID {
				dropped = true
			}
			continue
		}
		switch {
		case s.kind == "ping" && s.dir == toCloud:
			pings = append(pings, s.at)
		case s.kind == "pong" && s.dir == fromCloud:
			pongs = append(pongs, s.at)
		case s.kind == "ping" && s.dir == fromCloud && !s.at.Before(from):
			cloudPings = append(cloudPings, s.at)
		case s.kind == "close" || s.kind == "cut":
			dropped = true
		}
	}
	if dropped {
		return c.fail("keep an agent's connection open while it pings and answers pings; drop it only after 60 s of silence",
			"the connection ended while the agent was idle (it had sent %s)", plural(len(pings), "ping", "pings"))
	}
	var slowest time.Duration
	for i, at := range pings {
		if i >= len(pongs) {
			if ch.clock.Now().Sub(at) < pongWithin {
				continue // the last ping may still be answered
			}
			return c.fail("answer each websocket ping with a pong (gorilla/websocket and most libraries do it by default)",
				"%s from the agent, %s from the cloud", plural(len(pings), "ping", "pings"), plural(len(pongs), "pong", "pongs"))
		}
		if d := pongs[i].Sub(at); d > slowest {
			slowest = d
		}
	}
	if slowest > pongWithin {
		return c.fail("answer pings at once", "the slowest pong came %s after its ping, past %v", ms(slowest), pongWithin)
	}
	if len(cloudPings) == 0 {
		return c.fail(fmt.Sprintf("ping each agent every %v (§5), so the cloud too notices a dead connection", wire.PingInterval),
			"the cloud sent no ping in %v on an idle connection; the agent's %s got pongs", ch.opts.PingWait, plural(len(pings), "ping", "pings"))
	}
	return c.pass("over %v idle: %s from the agent answered (slowest pong %s), %s from the cloud",
		ch.opts.PingWait, plural(len(pings), "ping", "pings"), ms(slowest), plural(len(cloudPings), "ping", "pings"))
}
