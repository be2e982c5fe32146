package cloudtest

import (
	"net/http"
	"testing"

	"printgate/spool"
	"printgate/sync/wire"
)

type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestAPIJobsEventsAgents ensures the test API of §7: a job posted with
// the intake's fields is queued and pushed, events come back deduped in
// arrival order, GET /api/agents describes the agent, and bad jobs are
// refused with the frame's error code.
func TestAPIJobsEventsAgents(t *testing.T) {
	tc := newCloud(t, Options{})
	var q struct {
		TaskNo    string `json:"task_no"`
		Queued    int    `json:"queued"`
		Connected bool   `json:"connected"`
	}
	if st := tc.httpDo(t, "POST", "/api/agents/a1/jobs", nil,
		` {"task_no":"T1","printer":"kitchen","document":{"lines":[{"text":"hi"}]}}`, &q); st != http.StatusAccepted || q.TaskNo != "T1" || q.Queued != 1 || q.Connected {
		t.Fatalf("queue: %d %+v", st, q)
	}
	if st := tc.httpDo(t, "POST", "/api/agents/a1/jobs", nil,
		`{"type":"job","task_no":"T2","printer":"kitchen","payload":"eA==","priority":"urgent"}`, &q); st != http.StatusAccepted || q.Queued != 2 {
		t.Fatalf("queue with type: %d %+v", st, q)
	}
	for _, tt := range []struct{ body, code string }{
		{`{"task_no":"T3","printer":"kitchen"}`, wire.CodeInvalid},
		{`{"task_no":"T3","printer":"kitchen","payload":"eA==","extra":1}`, wire.CodeUnknownField},
		{`{"task_no":"T3","task_no":"T4","printer":"kitchen","payload":"eA=="}`, wire.CodeBadJSON},
		{`{"type":"events_ack","batch":"b"}`, "invalid"},
		{`{}`, wire.CodeInvalid},
		{`[]`, wire.CodeBadJSON},
	} {
		var e apiError
		if st := tc.httpDo(t, "POST", "/api/agents/a1/jobs", nil, tt.body, &e); st != http.StatusBadRequest || e.Error.Code != tt.code {
			t.Errorf("%s: %d %+v, want 400 %s", tt.body, st, e, tt.code)
		}
	}
	var jobs struct{ Jobs []QueuedJob }
	tc.httpDo(t, "GET", "/api/agents/a1/jobs", nil, "", &jobs)
	if len(jobs.Jobs) != 2 || jobs.Jobs[1].Job.Priority != spool.PriorityUrgent || string(jobs.Jobs[1].Job.Payload) != "x" {
		t.Fatalf("jobs %+v", jobs)
	}

	var tok struct {
		AccessToken string `json:"access_token"`
	}
	tc.httpDo(t, "POST", "/api/agents/a1/token", nil, "", &tok)
	cl := tc.connect(t, tok.AccessToken, "a1")
	cl.handshake("a1")
	if j := nextOf[*wire.Job](cl); j.TaskNo != "T1" || string(j.Document) != `{"lines":[{"text":"hi"}]}` {
		t.Fatalf("job %+v", j)
	}
	nextOf[*wire.Job](cl)
	cl.send(&wire.Events{Batch: "b1", Events: []wire.Event{event("T1", 1, spool.StateAccepted), event("T1", 1, spool.StateAccepted)}})
	nextOf[*wire.EventsAck](cl)
	var evs struct {
		Events  []wire.Event `json:"events"`
		Dropped int          `json:"dropped"`
	}
	tc.httpDo(t, "GET", "/api/agents/a1/events", nil, "", &evs)
	if len(evs.Events) != 1 || evs.Events[0].TaskNo != "T1" || evs.Events[0].N != 1 {
		t.Fatalf("events %+v", evs)
	}
	var agents struct{ Agents []AgentInfo }
	if st := tc.httpDo(t, "GET", "/api/agents", nil, "", &agents); st != http.StatusOK || len(agents.Agents) != 1 {
		t.Fatalf("agents: %d %+v", st, agents)
	}
	if a := agents.Agents[0]; a.AgentID != "a1" || !a.Connected || a.QueuedJobs != 2 || a.Events != 1 || a.DuplicateEvents != 1 || a.Printers[0].Name != "kitchen" {
		t.Fatalf("agent %+v", a)
	}
	if st := tc.httpDo(t, "GET", "/api/nothing", nil, "", nil); st != http.StatusNotFound {
		t.Errorf("unknown route: %d", st)
	}
	if st := tc.httpDo(t, "DELETE", "/api/agents", nil, "", nil); st != http.StatusMethodNotAllowed {
		t.Errorf("wrong method: %d", st)
	}
}

// TestAPICommandsAndOutage ensures commands go through the test API
// (409 while the agent is away), answers are readable, and the outage
// switches work: drop resets every connection, refuse makes handshakes
// fail without an HTTP answer until switched back.
func TestAPICommandsAndOutage(t *testing.T) {
	tc := newCloud(t, Options{})
	tok := tc.IssueToken("a1")
	var e apiError
	if st := tc.httpDo(t, "POST", "/api/agents/a1/commands", nil, `{"type":"cancel","id":"c1","task_no":"T1"}`, &e); st != http.StatusConflict || e.Error.Code != "not_connected" {
		t.Fatalf("command offline: %d %+v", st, e)
	}
	cl := tc.connect(t, tok, "a1")
	cl.handshake("a1")
	if st := tc.httpDo(t, "POST", "/api/agents/a1/commands", nil, `{"type":"cancel","id":"c1","task_no":"T1"}`, nil); st != http.StatusAccepted {
		t.Fatalf("command: %d", st)
	}
	if c := nextOf[*wire.Cancel](cl); c.ID != "c1" {
		t.Fatalf("cancel %+v", c)
	}
	if st := tc.httpDo(t, "POST", "/api/agents/a1/commands", nil, `{"type":"events_ack","batch":"b"}`, &e); st != http.StatusBadRequest {
		t.Fatalf("non-command: %d", st)
	}
	cl.send(&wire.CommandResult{ID: "c1", Error: &wire.Problem{Code: "conflict", Message: "already printing"}})
	cl.send(&wire.LogLines{ID: "l1", Lines: []string{"hello"}})
	if _, err := tc.WaitLogLines(ctxFor(t), "a1", "l1", 1); err != nil {
		t.Fatal(err)
	}
	var res struct{ Results []wire.CommandResult }
	tc.httpDo(t, "GET", "/api/agents/a1/results", nil, "", &res)
	if len(res.Results) != 1 || res.Results[0].OK || res.Results[0].Error.Code != "conflict" {
		t.Fatalf("results %+v", res)
	}
	var lines struct{ Lines []string }
	tc.httpDo(t, "GET", "/api/agents/a1/logs/l1", nil, "", &lines)
	if len(lines.Lines) != 1 || lines.Lines[0] != "hello" {
		t.Fatalf("lines %+v", lines)
	}

	var refused struct{ Refusing bool }
	if st := tc.httpDo(t, "POST", "/api/connections/refuse?on=true", nil, "", &refused); st != http.StatusOK || !refused.Refusing {
		t.Fatalf("refuse: %d", st)
	}
	var dropped struct{ Dropped int }
	if tc.httpDo(t, "POST", "/api/connections/drop", nil, "", &dropped); dropped.Dropped != 1 {
		t.Fatalf("dropped %d", dropped.Dropped)
	}
	cl.ended()
	if _, resp, err := tc.dial(tok, "a1"); err == nil || resp != nil {
		t.Fatalf("dial while refusing: %v %v, want a network error without an answer", err, resp)
	}
	tc.httpDo(t, "POST", "/api/connections/refuse?on=false", nil, "", nil)
	tc.connect(t, tok, "a1").handshake("a1")
	if tc.ConnectCount("a1") != 2 {
		t.Fatalf("connects %d", tc.ConnectCount("a1"))
	}
	if st := tc.httpDo(t, "POST", "/api/connections/refuse?on=maybe", nil, "", nil); st != http.StatusBadRequest {
		t.Fatalf("refuse=maybe: %d", st)
	}

	var rv struct{ Revoked int }
	tc.httpDo(t, "POST", "/api/agents/a1/revoke", nil, "", &rv)
	if rv.Revoked != 1 {
		t.Fatalf("revoked %d", rv.Revoked)
	}
	if err := tc.WaitConnected(ctxFor(t), "a1", false); err != nil {
		t.Fatal(err)
	}
}

// TestAPIEventGaps ensures GET /api/agents/{id}/events reports the gaps
// in each task's n: below its first recorded number and between two, as
// the agent's outbox cap or a salvaged spool leaves them (§5).
func TestAPIEventGaps(t *testing.T) {
	tc := newCloud(t, Options{})
	tok := tc.IssueToken("a1")
	cl := tc.connect(t, tok, "a1")
	cl.handshake("a1")
	var empty struct{ Gaps []Gap }
	tc.httpDo(t, "GET", "/api/agents/a1/events", nil, "", &empty)
	if empty.Gaps == nil || len(empty.Gaps) != 0 {
		t.Fatalf("gaps before any event: %#v, want []", empty.Gaps)
	}
	cl.send(&wire.Events{Batch: "b1", Events: []wire.Event{
		event("T1", 1, spool.StateAccepted), event("T1", 4, spool.StatePrinted),
		event("T2", 3, spool.StateQueued), event("T3", 1, spool.StateAccepted), event("T3", 2, spool.StateQueued),
	}})
	nextOf[*wire.EventsAck](cl)
	var evs struct{ Gaps []Gap }
	tc.httpDo(t, "GET", "/api/agents/a1/events", nil, "", &evs)
	want := []Gap{{"T1", 2, 3}, {"T2", 1, 2}}
	if len(evs.Gaps) != len(want) || evs.Gaps[0] != want[0] || evs.Gaps[1] != want[1] {
		t.Fatalf("gaps %+v, want %+v", evs.Gaps, want)
	}
}
