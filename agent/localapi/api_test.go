package localapi_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"printgate/agent/api"
	"printgate/agent/localapi"
	"printgate/agent/metrics"
	"printgate/spool"
)

// TestSubmitAnswers ensures POST /api/v1/tasks gives every answer of
// PROTOCOL.md §3 with the right status and code: a new task, a duplicate,
// each kind of bad input, an unknown printer, a too-large task (both over
// the request limit and over the store's task limit) and a full store.
func TestSubmitAnswers(t *testing.T) {
	f := newFake()
	f.maxTaskBytes = 4096
	c := newAPI(t, f, localapi.Options{MaxBodyBytes: localapi.BodyLimit(4096)})
	doc := `{"lines":[{"text":"桌 12 · 堂食","align":"center"},{"cut":"partial"}]}`

	// New, then the same task_no again: 202 then 200 with the stored state.
	a := c.do("POST", "/api/v1/tasks", payloadTask("ORD-1_KITCHEN_v1", "kitchen", secretPayload))
	wantStatus(t, a, http.StatusAccepted, "")
	var got struct {
		TaskNo    string `json:"task_no"`
		State     string `json:"state"`
		Seq       uint64 `json:"seq"`
		Duplicate *bool  `json:"duplicate"`
	}
	a.decode(t, &got)
	if got.TaskNo != "ORD-1_KITCHEN_v1" || got.State != "ACCEPTED" || got.Seq != 1 || got.Duplicate == nil || *got.Duplicate {
		t.Fatalf("new task answer %s", a.body)
	}
	f.move("ORD-1_KITCHEN_v1", spool.StateQueued)
	a = c.do("POST", "/api/v1/tasks", payloadTask("ORD-1_KITCHEN_v1", "kitchen", []byte("different bytes")))
	wantStatus(t, a, http.StatusOK, "")
	a.decode(t, &got)
	if got.State != "QUEUED" || got.Seq != 1 || !*got.Duplicate {
		t.Fatalf("duplicate answer %s, want the stored task (QUEUED, seq 1) with duplicate true", a.body)
	}
	if f.tasks["ORD-1_KITCHEN_v1"].Size != len(secretPayload) {
		t.Fatal("duplicate replaced the stored task")
	}

	// A document task and every optional field.
	a = c.do("POST", "/api/v1/tasks", `{"task_no":"ORD-2_KITCHEN_v1","printer":"kitchen","priority":"urgent","document":`+doc+`,"timeout":"2m"}`)
	wantStatus(t, a, http.StatusAccepted, "")
	if st := f.tasks["ORD-2_KITCHEN_v1"]; st.Priority != spool.PriorityUrgent || string(st.Document) != doc || st.Origin != spool.OriginLocal {
		t.Fatalf("stored document task %+v", st)
	}

	b64 := base64.StdEncoding.EncodeToString([]byte("hello"))
	cases := []struct {
		name   string
		body   string
		status int
		code   string
		say    string // the message must mention this
	}{
		{"empty body", "", 400, "bad_json", "empty"},
		{"not JSON", `{"task_no": "A_v1",`, 400, "bad_json", "middle"},
		{"syntax error", `{"task_no" "A_v1"}`, 400, "bad_json", "not valid JSON"},
		{"array", `[1,2]`, 400, "bad_json", "object"},
		{"wrong type", `{"task_no": 42, "printer": "kitchen", "payload": "` + b64 + `"}`, 400, "bad_json", "task_no"},
		{"trailing data", payloadTask("A_v1", "kitchen", []byte("x")) + `{}`, 400, "bad_json", "more after"},
		{"unknown field", `{"task_no":"A_v1","printer":"kitchen","payload":"` + b64 + `","copies":2}`, 400, "unknown_field", "copies"},
		{"misspelt field", `{"task_no":"A_v1","printer":"kitchen","paylod":"` + b64 + `"}`, 400, "unknown_field", "paylod"},
		{"missing task_no", `{"printer":"kitchen","payload":"` + b64 + `"}`, 400, "invalid_task", "task_no"},
		{"bad task_no", payloadTask("ORD 1/../x", "kitchen", []byte("x")), 400, "invalid_task", "task_no"},
		{"long task_no", payloadTask(strings.Repeat("A", 129), "kitchen", []byte("x")), 400, "invalid_task", "1-128"},
		{"bad printer name", payloadTask("A_v1", "kitchen/1", []byte("x")), 400, "invalid_task", "printer"},
		{"bad priority", `{"task_no":"A_v1","printer":"kitchen","priority":"high","payload":"` + b64 + `"}`, 400, "invalid_task", "urgent"},
		{"both", `{"task_no":"A_v1","printer":"kitchen","payload":"` + b64 + `","document":` + doc + `}`, 400, "invalid_task", "both"},
		{"neither", `{"task_no":"A_v1","printer":"kitchen"}`, 400, "invalid_task", "neither"},
		{"null document only", `{"task_no":"A_v1","printer":"kitchen","document":null}`, 400, "invalid_task", "neither"},
		{"bad base64", `{"task_no":"A_v1","printer":"kitchen","payload":"not base64!!"}`, 400, "bad_payload", "base64"},
		{"empty payload", `{"task_no":"A_v1","printer":"kitchen","payload":""}`, 400, "bad_payload", "empty"},
		{"document not object", `{"task_no":"A_v1","printer":"kitchen","document":"text"}`, 400, "bad_document", "object"},
		{"document without lines", `{"task_no":"A_v1","printer":"kitchen","document":{"rows":[]}}`, 400, "bad_document", "lines"},
		{"document lines wrong", `{"task_no":"A_v1","printer":"kitchen","document":{"lines":"abc"}}`, 400, "bad_document", "lines"},
		{"document line not object", `{"task_no":"A_v1","printer":"kitchen","document":{"lines":[{"text":"a"},7]}}`, 400, "bad_document", "line 2"},
		{"bad timeout", `{"task_no":"A_v1","printer":"kitchen","payload":"` + b64 + `","timeout":"90"}`, 400, "bad_timeout", "90s"},
		{"negative timeout", `{"task_no":"A_v1","printer":"kitchen","payload":"` + b64 + `","timeout":"-5s"}`, 400, "bad_timeout", "positive"},
		{"unknown printer", payloadTask("A_v1", "patio", []byte("x")), 404, "unknown_printer", `"patio"`},
		{"over the request limit", payloadTask("A_v1", "kitchen", make([]byte, 8192)), 413, "payload_too_large", "limit"},
		{"over the task limit", payloadTask("A_v1", "kitchen", make([]byte, 4097)), 413, "payload_too_large", "4096"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := c.do("POST", "/api/v1/tasks", tc.body)
			wantStatus(t, a, tc.status, tc.code)
			if !strings.Contains(a.message(), tc.say) {
				t.Errorf("message %q does not mention %q", a.message(), tc.say)
			}
		})
	}
	if _, ok := f.tasks["A_v1"]; ok {
		t.Fatal("a refused task was stored")
	}

	t.Run("storage full", func(t *testing.T) {
		f.full = true
		defer func() { f.full = false }()
		a := c.do("POST", "/api/v1/tasks", payloadTask("ORD-3_KITCHEN_v1", "kitchen", []byte("x")))
		wantStatus(t, a, http.StatusInsufficientStorage, "storage_full")
		if a.header.Get("Retry-After") == "" {
			t.Error("507 without Retry-After")
		}
		// Nothing already accepted is affected: its duplicate still answers.
		wantStatus(t, c.do("POST", "/api/v1/tasks", payloadTask("ORD-1_KITCHEN_v1", "kitchen", []byte("x"))), http.StatusOK, "")
	})
}

// TestKnownTaskIsDuplicateFirst ensures a resend of a task_no the backend
// knows is answered 200 duplicate with the stored state whatever this door
// would refuse in it (docs/DESIGN.md, invariant 7), while the same request with a
// new task_no is refused as before, and a body whose task_no cannot be read
// is refused outright.
func TestKnownTaskIsDuplicateFirst(t *testing.T) {
	f := newFake()
	f.maxTaskBytes = 4096
	c := newAPI(t, f, localapi.Options{MaxBodyBytes: localapi.BodyLimit(4096)})
	wantStatus(t, c.do("POST", "/api/v1/tasks", payloadTask("K_v1", "kitchen", []byte("x"))), http.StatusAccepted, "")
	f.move("K_v1", spool.StateQueued)
	b64 := base64.StdEncoding.EncodeToString([]byte("x"))
	for _, tc := range []struct {
		name, rest string
		status     int // what a new task_no gets
		code       string
	}{
		{"unknown printer", `"printer":"patio","payload":"` + b64 + `"`, 404, "unknown_printer"},
		{"bad base64", `"printer":"kitchen","payload":"not base64!!"`, 400, "bad_payload"},
		{"bad timeout", `"printer":"kitchen","payload":"` + b64 + `","timeout":"48h"`, 400, "bad_timeout"},
		{"bad priority", `"printer":"kitchen","priority":"high","payload":"` + b64 + `"`, 400, "invalid_task"},
		{"both", `"printer":"kitchen","payload":"` + b64 + `","document":{"lines":[{"text":"x"}]}`, 400, "invalid_task"},
		{"bad document", `"printer":"kitchen","document":{"lines":[]}`, 400, "bad_document"},
		{"unknown field", `"printer":"kitchen","payload":"` + b64 + `","copies":2`, 400, "unknown_field"},
		{"over the task limit", `"printer":"kitchen","payload":"` + base64.StdEncoding.EncodeToString(make([]byte, 4097)) + `"`, 413, "payload_too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := c.do("POST", "/api/v1/tasks", `{"task_no":"K_v1",`+tc.rest+`}`)
			wantStatus(t, a, http.StatusOK, "")
			var got struct {
				State     string `json:"state"`
				Duplicate bool   `json:"duplicate"`
			}
			if a.decode(t, &got); got.State != "QUEUED" || !got.Duplicate {
				t.Errorf("resend answer %s, want the stored task (QUEUED) with duplicate true", a.body)
			}
			wantStatus(t, c.do("POST", "/api/v1/tasks", `{"task_no":"N_v1",`+tc.rest+`}`), tc.status, tc.code)
		})
	}
	if _, ok := f.tasks["N_v1"]; ok {
		t.Fatal("a refused task was stored")
	}
	wantStatus(t, c.do("POST", "/api/v1/tasks", `{"task_no":"K_v1",`), http.StatusBadRequest, "bad_json")
}

// TestDefaultBodyLimit ensures the default request limit lets a 1 MiB
// ticket through as base64 (the spool's default task limit decides), and
// refuses a larger body with 413 even when it is sent without a length.
func TestDefaultBodyLimit(t *testing.T) {
	f := newFake()
	c := newAPI(t, f, localapi.Options{})
	wantStatus(t, c.do("POST", "/api/v1/tasks", payloadTask("BIG_v1", "kitchen", make([]byte, 1<<20))), http.StatusAccepted, "")
	wantStatus(t, c.do("POST", "/api/v1/tasks", payloadTask("BIG_v2", "kitchen", make([]byte, 1<<20+1))), http.StatusRequestEntityTooLarge, "payload_too_large")

	huge := payloadTask("HUGE_v1", "kitchen", make([]byte, 2<<20))
	wantStatus(t, c.do("POST", "/api/v1/tasks", huge), http.StatusRequestEntityTooLarge, "payload_too_large")
	// Chunked: no Content-Length, so the limit must trip while reading.
	req := httptest.NewRequest("POST", "/api/v1/tasks", strings.NewReader(huge))
	req.ContentLength = -1
	wantStatus(t, c.send(req), http.StatusRequestEntityTooLarge, "payload_too_large")
	if _, ok := f.tasks["HUGE_v1"]; ok {
		t.Fatal("an oversized task was stored")
	}
}

// TestAuth ensures every /api/ route, including unknown ones and wrong
// methods, needs the bearer token; that a missing or wrong token gets 401
// with a Bearer challenge and a JSON body; and that the right token works.
// Each kind of bad header comes from its own address, below the throttle's
// limit (TestThrottle* cover the lockout).
func TestAuth(t *testing.T) {
	f := newFake()
	c := newAPI(t, f, localapi.Options{})
	routes := []struct{ method, path string }{
		{"POST", "/api/v1/tasks"}, {"GET", "/api/v1/tasks"}, {"GET", "/api/v1/tasks/A_v1"},
		{"POST", "/api/v1/tasks/A_v1/reprint"}, {"POST", "/api/v1/tasks/A_v1/cancel"},
		{"GET", "/api/v1/printers"}, {"DELETE", "/api/v1/tasks"}, {"GET", "/api/v2/anything"},
	}
	for i, auth := range []string{
		"",                                       // missing
		"Bearer wrong-token",                     // wrong
		"Bearer " + testToken + "x",              // longer
		"Bearer " + testToken[:len(testToken)-1], // a prefix
		"Basic " + testToken,                     // wrong scheme
		"Bearer",                                 // scheme only
		testToken,                                // no scheme
	} {
		c.auth = auth
		c.remote = fmt.Sprintf("192.0.2.%d:1234", 10+i)
		for _, r := range routes {
			a := c.do(r.method, r.path, payloadTask("A_v1", "kitchen", []byte("x")))
			if a.status != http.StatusUnauthorized || a.code() != "unauthorized" {
				t.Errorf("%s %s with Authorization %q: %d %s, want 401", r.method, r.path, auth, a.status, a.body)
			}
			if !strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s %s: WWW-Authenticate %q", r.method, r.path, a.header.Get("WWW-Authenticate"))
			}
		}
	}
	if len(f.tasks) != 0 {
		t.Fatal("an unauthorized request stored a task")
	}
	c.remote = "192.0.2.200:1234"
	c.auth = "bearer " + testToken // the scheme is case-insensitive
	wantStatus(t, c.do("POST", "/api/v1/tasks", payloadTask("A_v1", "kitchen", []byte("x"))), http.StatusAccepted, "")
	c.auth = "Bearer " + testToken
	wantStatus(t, c.do("GET", "/api/v1/tasks/A_v1", ""), http.StatusOK, "")
	wantStatus(t, c.do("GET", "/api/v2/anything", ""), http.StatusNotFound, "not_found")
}

// TestNoTokenConfigured ensures an agent started without an api_token takes
// no work from the LAN, whatever the client sends.
func TestNoTokenConfigured(t *testing.T) {
	c := newClient(t, localapi.New(newFake(), localapi.Options{}))
	for _, auth := range []string{"", "Bearer ", "Bearer x"} {
		c.auth = auth
		a := c.do("POST", "/api/v1/tasks", payloadTask("A_v1", "kitchen", []byte("x")))
		wantStatus(t, a, http.StatusUnauthorized, "unauthorized")
		if !strings.Contains(a.message(), "api_token") {
			t.Errorf("message %q does not say the token is not configured", a.message())
		}
	}
	c.auth = ""
	wantStatus(t, c.do("GET", "/healthz", ""), http.StatusOK, "")
}

// TestTaskView ensures GET /api/v1/tasks/{task_no} shows every field of the
// contract, with the timeline, and never the payload; and answers 404 for
// an unknown task and 400 for a malformed task_no.
func TestTaskView(t *testing.T) {
	f := newFake()
	c := newAPI(t, f, localapi.Options{})
	wantStatus(t, c.do("POST", "/api/v1/tasks", payloadTask("ORD-7_KITCHEN_v1", "kitchen", secretPayload)), http.StatusAccepted, "")
	f.move("ORD-7_KITCHEN_v1", spool.StateQueued)
	f.move("ORD-7_KITCHEN_v1", spool.StateSending)
	f.move("ORD-7_KITCHEN_v1", spool.StatePrinted)

	a := c.do("GET", "/api/v1/tasks/ORD-7_KITCHEN_v1", "")
	wantStatus(t, a, http.StatusOK, "")
	var v map[string]any
	a.decode(t, &v)
	for _, k := range []string{"task_no", "printer", "target", "state", "reason", "attempts", "confirmation", "possible_duplicate", "origin", "reprint_of", "truncated", "seq", "timeline"} {
		if _, ok := v[k]; !ok {
			t.Errorf("task view lacks %q: %s", k, a.body)
		}
	}
	for _, k := range []string{"payload", "document", "sha256"} {
		if _, ok := v[k]; ok {
			t.Errorf("task view has %q: %s", k, a.body)
		}
	}
	if v["state"] != "PRINTED" || v["confirmation"] != "printed" || v["origin"] != "local" || v["seq"] != 1.0 {
		t.Errorf("task view %s", a.body)
	}
	tl, _ := v["timeline"].([]any)
	if len(tl) != 4 {
		t.Fatalf("timeline has %d entries, want 4: %s", len(tl), a.body)
	}
	last := tl[3].(map[string]any)
	for _, k := range []string{"state", "at", "reason", "printer"} {
		if _, ok := last[k]; !ok {
			t.Errorf("timeline entry lacks %q", k)
		}
	}
	if last["state"] != "PRINTED" || last["printer"] != "kitchen" {
		t.Errorf("last timeline entry %v", last)
	}

	wantStatus(t, c.do("GET", "/api/v1/tasks/NOPE_v1", ""), http.StatusNotFound, "not_found")
	wantStatus(t, c.do("GET", "/api/v1/tasks/bad%20no", ""), http.StatusBadRequest, "invalid_task")
}

// TestList ensures GET /api/v1/tasks pages through tasks in accept order
// with next as the cursor (null on the last page), filters by state and
// printer, and refuses bad parameters with 400.
func TestList(t *testing.T) {
	f := newFake()
	c := newAPI(t, f, localapi.Options{})
	for i := 1; i <= 5; i++ {
		printer := "kitchen"
		if i%2 == 0 {
			printer = "bar"
		}
		wantStatus(t, c.do("POST", "/api/v1/tasks", payloadTask(fmt.Sprintf("ORD-%d_v1", i), printer, secretPayload)), http.StatusAccepted, "")
	}
	f.move("ORD-3_v1", spool.StateQueued)

	type page struct {
		Tasks []struct {
			TaskNo string `json:"task_no"`
			State  string `json:"state"`
		} `json:"tasks"`
		Next *uint64 `json:"next"`
	}
	list := func(query string) (page, answer) {
		t.Helper()
		a := c.do("GET", "/api/v1/tasks"+query, "")
		wantStatus(t, a, http.StatusOK, "")
		var p page
		a.decode(t, &p)
		return p, a
	}
	names := func(p page) []string {
		var out []string
		for _, x := range p.Tasks {
			out = append(out, x.TaskNo)
		}
		return out
	}

	var all []string
	after := ""
	for pages := 0; ; pages++ {
		p, a := list("?limit=2" + after)
		all = append(all, names(p)...)
		if p.Next == nil {
			if !bytes.Contains(a.body, []byte(`"next":null`)) {
				t.Errorf("last page %s lacks next:null", a.body)
			}
			if pages != 2 {
				t.Errorf("5 tasks in pages of 2 took %d pages", pages+1)
			}
			break
		}
		after = fmt.Sprintf("&after=%d", *p.Next)
	}
	if want := []string{"ORD-1_v1", "ORD-2_v1", "ORD-3_v1", "ORD-4_v1", "ORD-5_v1"}; !slices.Equal(all, want) {
		t.Errorf("paged through %v, want %v", all, want)
	}
	if p, _ := list("?state=QUEUED"); !slices.Equal(names(p), []string{"ORD-3_v1"}) {
		t.Errorf("state=QUEUED listed %v", names(p))
	}
	if p, _ := list("?state=queued&printer=kitchen"); !slices.Equal(names(p), []string{"ORD-3_v1"}) {
		t.Errorf("state=queued&printer=kitchen listed %v", names(p))
	}
	if p, _ := list("?printer=bar"); !slices.Equal(names(p), []string{"ORD-2_v1", "ORD-4_v1"}) {
		t.Errorf("printer=bar listed %v", names(p))
	}
	if p, a := list("?state=PRINTED"); len(p.Tasks) != 0 || !bytes.Contains(a.body, []byte(`"tasks":[]`)) {
		t.Errorf("empty result %s, want tasks:[]", a.body)
	}

	for _, q := range []string{
		"?state=DONE", "?state=", "?limit=0", "?limit=1001", "?limit=ten", "?limit=-1",
		"?after=-1", "?after=x", "?printer=a/b", "?stat=QUEUED", "?limit=1&limit=2",
	} {
		a := c.do("GET", "/api/v1/tasks"+q, "")
		if q == "?state=" {
			// An empty filter is no filter.
			wantStatus(t, a, http.StatusOK, "")
			continue
		}
		if a.status != http.StatusBadRequest || a.code() != "bad_query" {
			t.Errorf("GET /api/v1/tasks%s: %d %s, want 400 bad_query", q, a.status, a.body)
		}
	}
	if p, _ := list("?limit=1000"); len(p.Tasks) != 5 {
		t.Errorf("limit=1000 listed %d", len(p.Tasks))
	}
}

// TestCancelAndReprint ensures cancel answers 200 with the canceled task
// and 409 once a task is SENDING or finished (with its state in the
// message), and reprint answers 202 with the new version linked to the old.
func TestCancelAndReprint(t *testing.T) {
	f := newFake()
	c := newAPI(t, f, localapi.Options{})
	for _, no := range []string{"A_KITCHEN_v1", "B_KITCHEN_v1", "C_KITCHEN"} {
		wantStatus(t, c.do("POST", "/api/v1/tasks", payloadTask(no, "kitchen", secretPayload)), http.StatusAccepted, "")
	}
	f.move("A_KITCHEN_v1", spool.StateQueued)

	a := c.do("POST", "/api/v1/tasks/A_KITCHEN_v1/cancel", "")
	wantStatus(t, a, http.StatusOK, "")
	var m map[string]any
	a.decode(t, &m)
	if m["state"] != "CANCELED" || f.tasks["A_KITCHEN_v1"].State != spool.StateCanceled {
		t.Fatalf("cancel answered %s", a.body)
	}

	a = c.do("POST", "/api/v1/tasks/A_KITCHEN_v1/cancel", "")
	wantStatus(t, a, http.StatusConflict, "conflict")
	if !strings.Contains(a.message(), "CANCELED") {
		t.Errorf("409 message %q does not say the task is CANCELED", a.message())
	}
	f.move("B_KITCHEN_v1", spool.StateQueued)
	f.move("B_KITCHEN_v1", spool.StateSending)
	a = c.do("POST", "/api/v1/tasks/B_KITCHEN_v1/cancel", "")
	wantStatus(t, a, http.StatusConflict, "conflict")
	if !strings.Contains(a.message(), "being sent") {
		t.Errorf("409 message %q does not say the task is being sent", a.message())
	}
	if f.tasks["B_KITCHEN_v1"].State != spool.StateSending {
		t.Fatal("refused cancel changed the task")
	}
	wantStatus(t, c.do("POST", "/api/v1/tasks/NOPE_v1/cancel", ""), http.StatusNotFound, "not_found")

	// Reprint: not while it may still print, then _vN → _vN+1, else _v2.
	wantStatus(t, c.do("POST", "/api/v1/tasks/B_KITCHEN_v1/reprint", ""), http.StatusConflict, "conflict")
	f.move("B_KITCHEN_v1", spool.StatePrinted)
	for _, want := range []string{"B_KITCHEN_v2", "B_KITCHEN_v3"} {
		a = c.do("POST", "/api/v1/tasks/B_KITCHEN_v1/reprint", "")
		wantStatus(t, a, http.StatusAccepted, "")
		a.decode(t, &m)
		if m["task_no"] != want || m["reprint_of"] != "B_KITCHEN_v1" || m["state"] != "ACCEPTED" {
			t.Errorf("reprint answered %s, want %s reprinting B_KITCHEN_v1", a.body, want)
		}
	}
	f.move("C_KITCHEN", spool.StateCanceled)
	a = c.do("POST", "/api/v1/tasks/C_KITCHEN/reprint", "")
	wantStatus(t, a, http.StatusAccepted, "")
	if a.decode(t, &m); m["task_no"] != "C_KITCHEN_v2" {
		t.Errorf("reprint of an unversioned task_no answered %s", a.body)
	}
	wantStatus(t, c.do("POST", "/api/v1/tasks/NOPE_v1/reprint", ""), http.StatusNotFound, "not_found")
}

// TestMethodNotAllowed ensures a wrong method gets 405 in JSON with Allow.
func TestMethodNotAllowed(t *testing.T) {
	c := newAPI(t, newFake(), localapi.Options{})
	for _, tc := range []struct{ method, path, allow string }{
		{"DELETE", "/api/v1/tasks", "GET, HEAD, POST"},
		{"PUT", "/api/v1/tasks/A_v1", "GET, HEAD"},
		{"GET", "/api/v1/tasks/A_v1/cancel", "POST"},
		{"GET", "/api/v1/tasks/A_v1/reprint", "POST"},
		{"POST", "/api/v1/printers", "GET, HEAD"},
		{"POST", "/healthz", "GET, HEAD"},
		{"DELETE", "/metrics", "GET, HEAD"},
	} {
		a := c.do(tc.method, tc.path, "")
		if a.status != http.StatusMethodNotAllowed || a.code() != "method_not_allowed" || a.header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d %s Allow %q, want 405 Allow %q", tc.method, tc.path, a.status, a.body, a.header.Get("Allow"), tc.allow)
		}
	}
	wantStatus(t, c.do("GET", "/nowhere", ""), http.StatusNotFound, "not_found")
}

// TestHealthzAndPrinters ensures /healthz answers without a token and
// /api/v1/printers lists the printers with the contract's fields.
func TestHealthzAndPrinters(t *testing.T) {
	f := newFake()
	c := newAPI(t, f, localapi.Options{})
	a := c.do("GET", "/api/v1/printers", "")
	wantStatus(t, a, http.StatusOK, "")
	want := `{"printers":[{"name":"kitchen","url":"tcp://192.168.1.50:9100","state":"READY","queue":0,"failover_to":"","since":"2026-11-30T11:00:00Z"},` +
		`{"name":"bar","url":"serial:///dev/ttyUSB0?baud=19200","state":"OFFLINE","queue":0,"failover_to":"kitchen"}]}`
	if got := strings.TrimSpace(string(a.body)); got != want {
		t.Errorf("printers:\n got %s\nwant %s", got, want)
	}

	c.auth = ""
	a = c.do("GET", "/healthz", "")
	wantStatus(t, a, http.StatusOK, "")
	if got := strings.TrimSpace(string(a.body)); got != `{"status":"ok","link":"offline","outbox":3,"outbox_dropped":0}` {
		t.Errorf("healthz %s", got)
	}
	f.health = api.Health{Status: "failed", Link: "offline", Error: "agent core stopped: lane k panicked"}
	a = c.do("GET", "/healthz", "")
	if a.status != http.StatusServiceUnavailable || !bytes.Contains(a.body, []byte(`"error":"agent core stopped: lane k panicked"`)) {
		t.Errorf("failed healthz %s", a.body)
	}
	f.health = api.Health{Link: "unpaired"}
	if a = c.do("GET", "/healthz", ""); !bytes.Contains(a.body, []byte(`"status":"ok"`)) {
		t.Errorf("healthz with empty status %s, want status ok", a.body)
	}
	f.printers = nil
	c.auth = "Bearer " + testToken
	if a = c.do("GET", "/api/v1/printers", ""); strings.TrimSpace(string(a.body)) != `{"printers":[]}` {
		t.Errorf("no printers: %s", a.body)
	}
}

// TestMetricsAccess ensures /metrics serves Prometheus text to loopback
// clients without a token and to others only with it.
func TestMetricsAccess(t *testing.T) {
	m := metrics.New()
	m.IncAccepted("local", false)
	m.SetPrinterState("kitchen", "READY")
	c := newAPI(t, newFake(), localapi.Options{Metrics: m.Registry()})
	c.auth = ""
	for _, tc := range []struct {
		remote, auth string
		status       int
	}{
		{"127.0.0.1:40000", "", 200},
		{"127.8.9.10:40000", "", 200},
		{"[::1]:40000", "", 200},
		{"[::ffff:127.0.0.1]:40000", "", 200},
		{"192.168.1.20:40000", "", 401},
		{"[fe80::1]:40000", "", 401},
		{"192.168.1.20:40000", "Bearer wrong", 401},
		{"192.168.1.20:40000", "Bearer " + testToken, 200},
	} {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.RemoteAddr = tc.remote
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		a := c.send(req)
		if a.status != tc.status {
			t.Errorf("/metrics from %s auth %q: %d %s, want %d", tc.remote, tc.auth, a.status, a.body, tc.status)
			continue
		}
		if tc.status == 200 {
			for _, name := range []string{"printgate_tasks_accepted_total", "printgate_printer_state", "go_goroutines"} {
				if !bytes.Contains(a.body, []byte(name)) {
					t.Errorf("/metrics lacks %s", name)
				}
			}
			if ct := a.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
				t.Errorf("/metrics Content-Type %q", ct)
			}
		} else if !strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("/metrics 401 without a Bearer challenge")
		}
	}

	// Over a real loopback connection, as a local Prometheus would scrape.
	srv := httptest.NewServer(localapi.New(newFake(), localapi.Options{Token: testToken, Metrics: m.Registry()}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/metrics over loopback: %d", resp.StatusCode)
	}

	// Without a registry there is nothing to serve.
	c = newAPI(t, newFake(), localapi.Options{})
	wantStatus(t, c.do("GET", "/metrics", ""), http.StatusNotFound, "not_found")
}

// TestBackendFailures ensures an unexpected backend error is a 500 that
// reveals nothing of its cause to the client but logs it, and a closed
// store is a 503 with Retry-After.
func TestBackendFailures(t *testing.T) {
	f := newFake()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := newAPI(t, f, localapi.Options{Logger: log})
	f.failWith = errors.New("bbolt: page 42 checksum mismatch in /var/lib/printgate/spool.db")
	for _, r := range []struct{ method, path string }{
		{"POST", "/api/v1/tasks"}, {"GET", "/api/v1/tasks"}, {"GET", "/api/v1/tasks/A_v1"},
		{"POST", "/api/v1/tasks/A_v1/reprint"}, {"POST", "/api/v1/tasks/A_v1/cancel"},
	} {
		a := c.do(r.method, r.path, payloadTask("A_v1", "kitchen", []byte("x")))
		wantStatus(t, a, http.StatusInternalServerError, "internal")
		if bytes.Contains(a.body, []byte("bbolt")) || bytes.Contains(a.body, []byte("/var/lib")) {
			t.Errorf("%s %s: 500 leaks its cause: %s", r.method, r.path, a.body)
		}
	}
	if !strings.Contains(logs.String(), "checksum mismatch") || !strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("the 500's cause was not logged at error level:\n%s", logs.String())
	}

	f.failWith = fmt.Errorf("accept: %w", spool.ErrClosed)
	a := c.do("POST", "/api/v1/tasks", payloadTask("A_v1", "kitchen", []byte("x")))
	wantStatus(t, a, http.StatusServiceUnavailable, "unavailable")
	if a.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
}

// TestStoredNotPrintingAnswer ensures a task stored in the moment the
// agent's core stopped is answered 503 stored_not_printing with
// Retry-After, naming the stored task and asking for the same task_no,
// never a new one; a plain unavailable stays "took nothing".
func TestStoredNotPrintingAnswer(t *testing.T) {
	f := newFake()
	c := newAPI(t, f, localapi.Options{})
	f.failWith = &api.StoredNotPrinting{TaskNo: "A_v1", State: "ACCEPTED"}
	a := c.do("POST", "/api/v1/tasks", payloadTask("A_v1", "kitchen", []byte("x")))
	wantStatus(t, a, http.StatusServiceUnavailable, api.CodeStoredNotPrinting)
	if a.header.Get("Retry-After") == "" {
		t.Error("503 stored_not_printing without Retry-After")
	}
	if m := a.message(); !strings.Contains(m, `"A_v1" IS stored`) || !strings.Contains(m, "SAME task_no") || strings.Contains(m, "took nothing") {
		t.Errorf("message %q", m)
	}
	// A reprint's answer names the new version that was stored.
	f.failWith = fmt.Errorf("reprint: A_v1 as A_v2: %w", &api.StoredNotPrinting{TaskNo: "A_v2", State: "ACCEPTED"})
	a = c.do("POST", "/api/v1/tasks/A_v1/reprint", "")
	wantStatus(t, a, http.StatusServiceUnavailable, api.CodeStoredNotPrinting)
	if m := a.message(); !strings.Contains(m, `"A_v2" IS stored`) {
		t.Errorf("reprint message %q, want the stored version named", m)
	}
	f.failWith = fmt.Errorf("x: %w", api.ErrUnavailable)
	a = c.do("POST", "/api/v1/tasks", payloadTask("A_v1", "kitchen", []byte("x")))
	wantStatus(t, a, http.StatusServiceUnavailable, api.CodeUnavailable)
}

// TestRequestLog ensures each request is logged at debug level with method,
// path, status and duration, and that the token never reaches the log.
func TestRequestLog(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := newAPI(t, newFake(), localapi.Options{Logger: log})
	c.do("POST", "/api/v1/tasks", payloadTask("LOG_v1", "kitchen", secretPayload))
	c.auth = "Bearer not-the-token-but-still-secret"
	c.do("GET", "/api/v1/tasks/LOG_v1", "")
	out := logs.String()
	for _, want := range []string{`"method":"POST"`, `"path":"/api/v1/tasks"`, `"status":202`, `"duration":`, `"status":401`, `"level":"DEBUG"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	for _, secret := range []string{testToken, "not-the-token-but-still-secret", "SECRET-MARKER", base64.StdEncoding.EncodeToString(secretPayload)} {
		if strings.Contains(out, secret) {
			t.Errorf("log contains a secret %q", secret)
		}
	}
}

// TestDoorLimitAnswers ensures a task over its door's rate is answered 429
// too_many_requests with Retry-After in whole seconds (rounded up) naming
// rate_api, and one over its door's quota 507 storage_full naming the
// key, as the agent words them.
func TestDoorLimitAnswers(t *testing.T) {
	f := newFake()
	c := newAPI(t, f, localapi.Options{})
	f.failWith = fmt.Errorf("task A_v1: %w", &api.RateLimited{Door: "api", Key: "rate_api", Rate: 20, Burst: 200, RetryAfter: 1200 * time.Millisecond})
	a := c.do("POST", "/api/v1/tasks", payloadTask("A_v1", "kitchen", []byte("x")))
	wantStatus(t, a, http.StatusTooManyRequests, api.CodeTooManyRequests)
	if ra := a.header.Get("Retry-After"); ra != "2" {
		t.Errorf("Retry-After %q, want 2 (1.2s rounded up)", ra)
	}
	if !strings.Contains(a.message(), "rate_api") || strings.Contains(a.message(), "task A_v1") {
		t.Errorf("429 message %q: want the door's rate and key, without the task prefix", a.message())
	}
	qe := &spool.QuotaError{Origin: spool.OriginLocal, Used: 100, Quota: 100, Need: 10}
	f.failWith = fmt.Errorf("accept: %w; [spool] quota_api = \"50%%\" sets the api door's share of the spool", qe)
	a = c.do("POST", "/api/v1/tasks", payloadTask("A_v1", "kitchen", []byte("x")))
	wantStatus(t, a, http.StatusInsufficientStorage, api.CodeStorageFull)
	if !strings.Contains(a.message(), "quota_api") || a.header.Get("Retry-After") == "" {
		t.Errorf("507 for a quota: %q, Retry-After %q", a.message(), a.header.Get("Retry-After"))
	}
}
