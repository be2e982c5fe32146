package cloudtest

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"printgate/spool"
	"printgate/sync/wire"
)

// TestHandshakeAuth ensures the handshake is refused with 401 for a
// missing, unknown, revoked or another agent's token, with 400 without an
// agent id or the subprotocol, and switches (101, printgate.v1) for a good
// token.
func TestHandshakeAuth(t *testing.T) {
	tc := newCloud(t, Options{})
	good := tc.IssueToken("a1")
	revoked := tc.IssueToken("a1")
	tc.Revoke(revoked)
	for _, tt := range []struct {
		name, token, agent string
		want               int
	}{
		{"no token", "", "a1", http.StatusUnauthorized},
		{"unknown token", "nope", "a1", http.StatusUnauthorized},
		{"revoked token", revoked, "a1", http.StatusUnauthorized},
		{"another agent's token", good, "a2", http.StatusUnauthorized},
		{"no agent id", good, "", http.StatusBadRequest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, resp, err := tc.dial(tt.token, tt.agent)
			if err == nil {
				conn.Close()
				t.Fatal("handshake accepted")
			}
			if resp == nil || resp.StatusCode != tt.want {
				t.Fatalf("response %v, want %d", resp, tt.want)
			}
			if tt.want == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 without a Bearer challenge: %q", resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
	t.Run("no subprotocol", func(t *testing.T) {
		h := http.Header{wire.HeaderAuthorization: {"Bearer " + good}, wire.HeaderAgent: {"a1"}}
		conn, resp, err := websocket.DefaultDialer.Dial(tc.wsURL(), h)
		if err == nil {
			conn.Close()
			t.Fatal("handshake without the subprotocol accepted")
		}
		if resp == nil || resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("response %v, want 400", resp)
		}
	})
	t.Run("good token", func(t *testing.T) {
		conn, resp, err := tc.dial(good, "a1")
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer conn.Close()
		if resp.StatusCode != http.StatusSwitchingProtocols || conn.Subprotocol() != wire.Subprotocol {
			t.Fatalf("status %d subprotocol %q", resp.StatusCode, conn.Subprotocol())
		}
	})
}

// TestHelloWelcome ensures hello is answered with welcome (store id, the
// cloud's clock) and recorded, and the agent counts as connected only
// after it.
func TestHelloWelcome(t *testing.T) {
	clock := newFakeClock()
	tc := newCloud(t, Options{Clock: clock, StoreID: "s-42"})
	cl := tc.connect(t, tc.IssueToken("a1"), "a1")
	if tc.Connected("a1") {
		t.Fatal("connected before hello")
	}
	w := cl.handshake("a1")
	if w.StoreID != "s-42" || !w.ServerTime.Equal(clock.Now()) {
		t.Fatalf("welcome %+v", w)
	}
	if err := tc.WaitConnected(ctxFor(t), "a1", true); err != nil {
		t.Fatal(err)
	}
	h, ok := tc.Hello("a1")
	if !ok || h.Version != "test" || h.Outbox != 3 || tc.ConnectCount("a1") != 1 {
		t.Fatalf("hello %+v %v, connects %d", h, ok, tc.ConnectCount("a1"))
	}
	if p := tc.Printers("a1"); len(p) != 1 || p[0] != (wire.Printer{Name: "kitchen", State: "READY"}) {
		t.Fatalf("printers %+v", p)
	}
	cl.send(&wire.Printers{Printers: []wire.Printer{{Name: "kitchen", State: "PAPER_OUT"}}})
	if err := tc.Wait(ctxFor(t), func() bool { return len(tc.PrinterPushes("a1")) == 2 }); err != nil {
		t.Fatal(err)
	}
	if p := tc.Printers("a1"); p[0].State != "PAPER_OUT" {
		t.Fatalf("printers after the push %+v", p)
	}
}

// TestHelloRequiredFirst ensures a first frame other than hello, or a
// hello naming another agent, is answered with an error frame and the
// connection is closed.
func TestHelloRequiredFirst(t *testing.T) {
	tc := newCloud(t, Options{})
	tok := tc.IssueToken("a1")
	for _, first := range []wire.Message{
		&wire.Printers{Printers: []wire.Printer{{Name: "kitchen", State: "READY"}}},
		hello("a2"),
	} {
		cl := tc.connect(t, tok, "a1")
		cl.send(first)
		e := nextOf[*wire.Error](cl)
		if e.Code != wire.CodeInvalid || e.FrameType != first.Type() {
			t.Errorf("%s first: error %+v", first.Type(), e)
		}
		if err := cl.ended(); !isCloseCode(err, websocket.ClosePolicyViolation) {
			t.Errorf("%s first: ended with %v, want close 1008", first.Type(), err)
		}
	}
	if tc.ConnectCount("a1") != 0 {
		t.Fatalf("connects %d", tc.ConnectCount("a1"))
	}
}

// TestJobPushAndResend ensures queued jobs are pushed after welcome and
// while connected, and that a job without job_ack is sent again after a
// reconnect while an acknowledged one is not.
func TestJobPushAndResend(t *testing.T) {
	tc := newCloud(t, Options{})
	tok := tc.IssueToken("a1")
	if err := tc.Queue("a1", job("T1")); err != nil {
		t.Fatal(err)
	}
	cl := tc.connect(t, tok, "a1")
	cl.handshake("a1")
	if j := nextOf[*wire.Job](cl); j.TaskNo != "T1" || string(j.Payload) != "ORDER\n" {
		t.Fatalf("job %+v", j)
	}
	if err := tc.Queue("a1", job("T2")); err != nil {
		t.Fatal(err)
	}
	if j := nextOf[*wire.Job](cl); j.TaskNo != "T2" {
		t.Fatalf("job %+v", j)
	}
	cl.send(&wire.JobAck{TaskNo: "T1", Result: wire.ResultAccepted, State: spool.StateAccepted})
	if _, err := tc.WaitAcks(ctxFor(t), "a1", 1); err != nil {
		t.Fatal(err)
	}
	if n := tc.DropAll(); n != 1 {
		t.Fatalf("dropped %d", n)
	}
	if err := cl.ended(); err == nil || isCloseCode(err, websocket.CloseNormalClosure) || errors.As(err, new(*websocket.CloseError)) {
		t.Fatalf("drop ended the connection with %v, want a reset without a close frame", err)
	}
	if tc.Connected("a1") {
		t.Fatal("still connected after DropAll")
	}
	if jobs := tc.Jobs("a1"); len(jobs) != 1 || jobs[0].Job.TaskNo != "T2" || jobs[0].Sends != 1 {
		t.Fatalf("queued %+v", jobs)
	}

	cl2 := tc.connect(t, tok, "a1")
	cl2.handshake("a1")
	if j := nextOf[*wire.Job](cl2); j.TaskNo != "T2" {
		t.Fatalf("resent %+v, want T2 only", j)
	}
	cl2.send(&wire.JobAck{TaskNo: "T2", Result: wire.ResultDuplicate, State: spool.StatePrinted})
	acks, err := tc.WaitAcks(ctxFor(t), "a1", 2)
	if err != nil {
		t.Fatal(err)
	}
	if acks[1].TaskNo != "T2" || acks[1].Result != wire.ResultDuplicate || len(tc.Jobs("a1")) != 0 {
		t.Fatalf("acks %+v, queued %+v", acks, tc.Jobs("a1"))
	}
	if tc.ConnectCount("a1") != 2 {
		t.Fatalf("connects %d", tc.ConnectCount("a1"))
	}
}

// TestEventsDedupe ensures events are acknowledged per batch and recorded
// once per (task_no, n), in arrival order, even when a batch is resent.
func TestEventsDedupe(t *testing.T) {
	tc := newCloud(t, Options{})
	cl := tc.connect(t, tc.IssueToken("a1"), "a1")
	cl.handshake("a1")
	cl.send(&wire.Events{Batch: "b1", Events: []wire.Event{event("A", 1, spool.StateAccepted), event("A", 2, spool.StateQueued)}})
	if a := nextOf[*wire.EventsAck](cl); a.Batch != "b1" {
		t.Fatalf("ack %+v", a)
	}
	cl.send(&wire.Events{Batch: "b2", Events: []wire.Event{event("A", 2, spool.StateQueued), event("B", 1, spool.StateAccepted)}})
	if a := nextOf[*wire.EventsAck](cl); a.Batch != "b2" {
		t.Fatalf("ack %+v", a)
	}
	cl.send(&wire.Events{Batch: "b1", Events: []wire.Event{event("A", 1, spool.StateAccepted), event("A", 2, spool.StateQueued)}})
	if a := nextOf[*wire.EventsAck](cl); a.Batch != "b1" {
		t.Fatalf("ack of the resent batch %+v", a)
	}
	evs, err := tc.WaitEvents(ctxFor(t), "a1", 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.TaskNo+"/"+string(e.State))
	}
	if want := []string{"A/ACCEPTED", "A/QUEUED", "B/ACCEPTED"}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if in := tc.Agents()[0]; in.DuplicateEvents != 3 || in.Batches != 3 {
		t.Fatalf("info %+v", in)
	}
}

// TestEventsOfANewLife ensures the events of a task_no accepted again
// after its dedupe window (a new seq, its n counting from 1 again) are
// recorded, not dropped as duplicates of its first life's, while a resend
// of either life's is still dropped.
func TestEventsOfANewLife(t *testing.T) {
	tc := newCloud(t, Options{})
	cl := tc.connect(t, tc.IssueToken("a1"), "a1")
	cl.handshake("a1")
	life := func(seq uint64, n int, st spool.State) wire.Event {
		ev := event("A", n, st)
		ev.Seq = seq
		return ev
	}
	for i, b := range [][]wire.Event{
		{life(7, 1, spool.StateAccepted), life(7, 2, spool.StatePrinted)},
		{life(91, 1, spool.StateAccepted), life(91, 2, spool.StatePrinted)},
		{life(91, 1, spool.StateAccepted)},
	} {
		id := fmt.Sprintf("b%d", i)
		cl.send(&wire.Events{Batch: id, Events: b})
		if a := nextOf[*wire.EventsAck](cl); a.Batch != id {
			t.Fatalf("ack %+v", a)
		}
	}
	evs, err := tc.WaitEvents(ctxFor(t), "a1", 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 4 || evs[2].Seq != 91 || evs[2].N != 1 {
		t.Fatalf("events %+v; want both lives' two each", evs)
	}
	if in := tc.Agents()[0]; in.DuplicateEvents != 1 {
		t.Fatalf("info %+v; want the one resent event dropped", in)
	}
}

// TestMalformedFrames ensures a frame wire refuses, a binary frame and a
// frame only the cloud sends are each answered with an error frame, and
// the connection stays up.
func TestMalformedFrames(t *testing.T) {
	tc := newCloud(t, Options{})
	cl := tc.connect(t, tc.IssueToken("a1"), "a1")
	cl.handshake("a1")
	for _, tt := range []struct {
		name      string
		mt        int
		frame     string
		code, typ string
	}{
		{"not json", websocket.TextMessage, "not json", wire.CodeBadJSON, ""},
		{"missing batch", websocket.TextMessage, `{"type":"events","events":[]}`, wire.CodeInvalid, wire.TypeEvents},
		{"unknown type", websocket.TextMessage, `{"type":"hug"}`, wire.CodeUnknownType, ""},
		{"unknown field", websocket.TextMessage, `{"type":"events_ack","batch":"b","x":1}`, wire.CodeUnknownField, wire.TypeEventsAck},
		{"binary", websocket.BinaryMessage, `{"type":"printers"}`, wire.CodeBadJSON, ""},
		{"cloud's frame", websocket.TextMessage, `{"type":"events_ack","batch":"b"}`, wire.CodeInvalid, wire.TypeEventsAck},
		{"second hello", websocket.TextMessage, `{"type":"hello","agent_id":"a1","version":"v","printers":[{"name":"p","state":"READY"}],"outbox":0}`, wire.CodeInvalid, wire.TypeHello},
	} {
		cl.sendRaw(tt.mt, []byte(tt.frame))
		e := nextOf[*wire.Error](cl)
		if e.Code != tt.code || e.FrameType != tt.typ || e.Message == "" {
			t.Errorf("%s: error %+v, want code %s frame_type %q", tt.name, e, tt.code, tt.typ)
		}
	}
	cl.send(&wire.Events{Batch: "after", Events: []wire.Event{event("A", 1, spool.StateAccepted)}})
	if a := nextOf[*wire.EventsAck](cl); a.Batch != "after" {
		t.Fatalf("ack %+v", a)
	}
	if in := tc.Agents()[0]; in.RefusedFrames != 7 || !in.Connected {
		t.Fatalf("info %+v", in)
	}
}

// TestRevoke ensures revoking a token sends revoke, closes the connection
// and refuses the token at the next handshake with 401.
func TestRevoke(t *testing.T) {
	tc := newCloud(t, Options{})
	tok := tc.IssueToken("a1")
	cl := tc.connect(t, tok, "a1")
	cl.handshake("a1")
	if !tc.Revoke(tok) {
		t.Fatal("Revoke: token not known")
	}
	if r := nextOf[*wire.Revoke](cl); r.Reason == "" {
		t.Errorf("revoke without a reason")
	}
	if err := cl.ended(); !isCloseCode(err, websocket.ClosePolicyViolation) {
		t.Fatalf("ended with %v, want close 1008", err)
	}
	if err := tc.WaitConnected(ctxFor(t), "a1", false); err != nil {
		t.Fatal(err)
	}
	_, resp, err := tc.dial(tok, "a1")
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("dial after revoke: %v %v, want 401", err, resp)
	}
	if tc.Revoke(tok) {
		t.Fatal("a second Revoke reported the token as live")
	}
}

// TestPingAndSilence ensures the cloud pings every PingInterval, keeps an
// agent that answers pings even though it sends no frame, and drops one
// that stays silent for SilenceTimeout.
func TestPingAndSilence(t *testing.T) {
	const ping, silence = 20 * time.Millisecond, 150 * time.Millisecond
	tc := newCloud(t, Options{PingInterval: ping, SilenceTimeout: silence})
	live := tc.connect(t, tc.IssueToken("live"), "live")
	live.handshake("live")
	// Enough pings to span three silence timeouts, answered by pongs only.
	for i := 0; i < int(3*silence/ping); i++ {
		select {
		case <-live.pings:
		case <-time.After(waitFor):
			t.Fatalf("ping %d did not come", i)
		}
	}
	if !tc.Connected("live") || tc.ConnectCount("live") != 1 {
		t.Fatalf("an agent answering pings was dropped: %+v", tc.Agents())
	}

	// A silent agent: it reads its welcome, then reads nothing more, so it
	// never answers a ping.
	conn, _, err := tc.dial(tc.IssueToken("mute"), "mute")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	b, _ := wire.Encode(hello("mute"))
	conn.WriteMessage(websocket.TextMessage, b)
	if _, _, err := conn.ReadMessage(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := tc.WaitConnected(ctxFor(t), "mute", true); err != nil {
		t.Fatal(err)
	}
	if err := tc.WaitConnected(ctxFor(t), "mute", false); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < silence*9/10 {
		t.Errorf("dropped after %v, before the %v silence timeout", d, silence)
	}
	var in AgentInfo
	for _, a := range tc.Agents() {
		if a.AgentID == "mute" {
			in = a
		}
	}
	if !strings.Contains(in.LastDisconnect, "silent") {
		t.Errorf("last disconnect %q", in.LastDisconnect)
	}
}

// TestCommands ensures commands reach a connected agent and their answers
// are recorded, and are refused for an agent that is not connected.
func TestCommands(t *testing.T) {
	tc := newCloud(t, Options{})
	if err := tc.Send("a1", &wire.Reprint{ID: "r1", TaskNo: "T1"}); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("send offline: %v", err)
	}
	cl := tc.connect(t, tc.IssueToken("a1"), "a1")
	cl.handshake("a1")
	if err := tc.Send("a1", &wire.Job{TaskNo: "T", Printer: "p", Payload: []byte("x")}); !errors.Is(err, ErrNotCommand) {
		t.Fatalf("send job: %v", err)
	}
	if err := tc.Send("a1", &wire.Reprint{ID: "r1", TaskNo: "T1"}); err != nil {
		t.Fatal(err)
	}
	if r := nextOf[*wire.Reprint](cl); r.ID != "r1" || r.TaskNo != "T1" {
		t.Fatalf("reprint %+v", r)
	}
	cl.send(&wire.CommandResult{ID: "r1", OK: true, TaskNo: "T1_v2"})
	if r, err := tc.WaitResult(ctxFor(t), "a1", "r1"); err != nil || r.TaskNo != "T1_v2" {
		t.Fatalf("result %+v %v", r, err)
	}
	if err := tc.Send("a1", &wire.LogsTail{ID: "l1", Lines: 2, Follow: true}); err != nil {
		t.Fatal(err)
	}
	if l := nextOf[*wire.LogsTail](cl); l.ID != "l1" || l.Lines != 2 || !l.Follow {
		t.Fatalf("logs_tail %+v", l)
	}
	cl.send(&wire.LogLines{ID: "l1", Lines: []string{"one", "two"}})
	cl.send(&wire.LogLines{ID: "l1", Lines: []string{"three"}})
	lines, err := tc.WaitLogLines(ctxFor(t), "a1", "l1", 3)
	if err != nil || !slices.Equal(lines, []string{"one", "two", "three"}) {
		t.Fatalf("lines %q %v", lines, err)
	}
	if err := tc.Send("a1", &wire.LogsStop{ID: "l1"}); err != nil {
		t.Fatal(err)
	}
	if s := nextOf[*wire.LogsStop](cl); s.ID != "l1" {
		t.Fatalf("logs_stop %+v", s)
	}
	cl.send(&wire.Error{Code: wire.CodeInvalid, Message: "job frame: bad", FrameType: wire.TypeJob})
	if err := tc.Wait(ctxFor(t), func() bool { return len(tc.ErrorFrames("a1")) == 1 }); err != nil {
		t.Fatal(err)
	}
}

// TestNewerConnectionReplaces ensures a second connection of the same
// agent takes over and the first is closed, so jobs go to one place.
func TestNewerConnectionReplaces(t *testing.T) {
	tc := newCloud(t, Options{})
	tok := tc.IssueToken("a1")
	first := tc.connect(t, tok, "a1")
	first.handshake("a1")
	second := tc.connect(t, tok, "a1")
	second.handshake("a1")
	if err := first.ended(); !isCloseCode(err, websocket.CloseNormalClosure) {
		t.Fatalf("first ended with %v", err)
	}
	if err := tc.Queue("a1", job("T1")); err != nil {
		t.Fatal(err)
	}
	if j := nextOf[*wire.Job](second); j.TaskNo != "T1" {
		t.Fatalf("job %+v", j)
	}
	if !tc.Connected("a1") || tc.ConnectCount("a1") != 2 {
		t.Fatalf("%+v", tc.Agents())
	}
}

// TestBounded ensures the per-agent limits hold: queueing past
// MaxQueuedJobs fails, events past MaxEvents forget the oldest and count
// them, other records keep the newest MaxRecords.
func TestBounded(t *testing.T) {
	tc := newCloud(t, Options{MaxQueuedJobs: 2, MaxEvents: 3, MaxRecords: 2})
	for _, n := range []string{"T1", "T2"} {
		if err := tc.Queue("a1", job(n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tc.Queue("a1", job("T3")); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("third job: %v, want ErrQueueFull", err)
	}
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	if st := tc.httpDo(t, "POST", "/api/agents/a1/jobs", nil, `{"task_no":"T3","printer":"kitchen","payload":"eA=="}`, &e); st != http.StatusTooManyRequests || e.Error.Code != "queue_full" {
		t.Fatalf("API: %d %+v", st, e)
	}
	cl := tc.connect(t, tc.IssueToken("a1"), "a1")
	cl.handshake("a1")
	nextOf[*wire.Job](cl)
	nextOf[*wire.Job](cl)
	var evs []wire.Event
	for i := 1; i <= 5; i++ {
		evs = append(evs, event("E", i, spool.StateQueued))
	}
	cl.send(&wire.Events{Batch: "b", Events: evs})
	nextOf[*wire.EventsAck](cl)
	got := tc.Events("a1")
	if len(got) != 3 || got[0].N != 3 || got[2].N != 5 {
		t.Fatalf("events %+v", got)
	}
	if in := tc.Agents()[0]; in.EventsDropped != 2 {
		t.Fatalf("info %+v", in)
	}
	for _, n := range []string{"T1", "T2", "T9"} {
		cl.send(&wire.JobAck{TaskNo: n, Result: wire.ResultAccepted, State: spool.StateAccepted})
	}
	if err := tc.Wait(ctxFor(t), func() bool { return len(tc.Jobs("a1")) == 0 && tc.Acks("a1")[len(tc.Acks("a1"))-1].TaskNo == "T9" }); err != nil {
		t.Fatal(err)
	}
	if acks := tc.Acks("a1"); len(acks) != 2 || acks[0].TaskNo != "T2" {
		t.Fatalf("acks %+v", acks)
	}
	// Room again: the acks emptied the queue.
	if err := tc.Queue("a1", job("T3")); err != nil {
		t.Fatal(err)
	}
}

// TestCloseEndsConnections ensures Close ends live connections and
// returns, after which handshakes get 503 and Queue fails with ErrClosed.
func TestCloseEndsConnections(t *testing.T) {
	tc := newCloud(t, Options{})
	tok := tc.IssueToken("a1")
	cl := tc.connect(t, tok, "a1")
	cl.handshake("a1")
	closed := make(chan struct{})
	go func() {
		tc.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(waitFor):
		t.Fatal("Close did not return with a connection up")
	}
	cl.ended()
	if tc.Connected("a1") {
		t.Fatal("connected after Close")
	}
	if _, resp, err := tc.dial(tok, "a1"); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial after Close: %v %v, want 503", err, resp)
	}
	if err := tc.Queue("a1", job("T1")); !errors.Is(err, ErrClosed) {
		t.Fatalf("queue after Close: %v", err)
	}
}
