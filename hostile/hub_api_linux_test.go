package hostile

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// hubJobList is GET /v1/stores/{store}/jobs.
type hubJobList struct {
	Jobs []struct {
		TaskNo string `json:"task_no"`
		State  string `json:"state"`
	} `json:"jobs"`
	Next string `json:"next"`
}

// taskNos lists a store's task_nos through the API.
func (h *Hub) taskNos(t *testing.T, store, key string) []string {
	t.Helper()
	code, body, _ := h.call(t, "GET", "/v1/stores/"+store+"/jobs?limit=1000", key, "")
	if code != http.StatusOK {
		t.Fatalf("list %s: %d %s", store, code, body)
	}
	var l hubJobList
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, j := range l.Jobs {
		out = append(out, j.TaskNo)
	}
	return out
}

// TestHubOrderAPIRefusesBadInput attacks the real hub's order API with a
// tenant's key and ensures every bad request gets its status and code and
// stores nothing: an unknown store and another tenant's store are the same
// 404 and no answer carries the other tenant's data; a wrong key is 401 and
// then throttled (429) while the right key still passes; oversize payload,
// document and request are 413; a bad document, a task_no over the
// alphabet or the length, bad JSON and an unknown field are 400. A list of
// the store's jobs afterwards holds only the one good job.
func TestHubOrderAPIRefusesBadInput(t *testing.T) {
	h := startHub(t)
	doc := `{"lines":[{"text":"Table 4"},{"cut":"partial"}]}`
	job := func(taskNo string) string {
		return fmt.Sprintf(`{"task_no":%q,"printer":"kitchen","document":%s}`, taskNo, doc)
	}
	if code, body, _ := h.call(t, "POST", "/v1/stores/a1/jobs", h.KeyAcme, job("GOOD-1")); code != http.StatusAccepted {
		t.Fatalf("good submit: %d %s", code, body)
	}
	// The rival tenant's job: nothing of it may reach acme's key.
	const secret = "RIVALSECRET-42"
	if code, body, _ := h.call(t, "POST", "/v1/stores/r1/jobs", h.KeyRival, job(secret)); code != http.StatusAccepted {
		t.Fatalf("rival submit: %d %s", code, body)
	}

	big := base64.StdEncoding.EncodeToString(make([]byte, 1<<20+1))
	bigDoc := `{"lines":[{"text":"` + strings.Repeat("x", 1<<20) + `"}]}`
	cases := []struct {
		name, method, path, key, body string
		status                        int
		code                          string
	}{
		{"unknown store", "POST", "/v1/stores/nosuch/jobs", h.KeyAcme, job("BAD-1"), 404, "not_found"},
		{"foreign store submit", "POST", "/v1/stores/r1/jobs", h.KeyAcme, job("BAD-2"), 404, "not_found"},
		{"foreign store duplicate probe", "POST", "/v1/stores/r1/jobs", h.KeyAcme, job(secret), 404, "not_found"},
		{"foreign job read", "GET", "/v1/stores/r1/jobs/" + secret, h.KeyAcme, "", 404, "not_found"},
		{"foreign job list", "GET", "/v1/stores/r1/jobs", h.KeyAcme, "", 404, "not_found"},
		{"foreign store view", "GET", "/v1/stores/r1", h.KeyAcme, "", 404, "not_found"},
		{"foreign reprint", "POST", "/v1/stores/r1/jobs/" + secret + "/reprint", h.KeyAcme, `{"id":"c1"}`, 404, "not_found"},
		{"foreign cancel", "POST", "/v1/stores/r1/jobs/" + secret + "/cancel", h.KeyAcme, `{"id":"c2"}`, 404, "not_found"},
		{"foreign revoke", "POST", "/v1/stores/r1/revoke", h.KeyAcme, "", 404, "not_found"},
		{"foreign pairing approve", "POST", "/v1/stores/r1/pairings/BCDF-GHJK/approve", h.KeyAcme, "", 404, "not_found"},
		{"foreign command read", "GET", "/v1/stores/r1/commands/c1", h.KeyAcme, "", 404, "not_found"},
		{"no key", "POST", "/v1/stores/a1/jobs", "", job("BAD-3"), 401, "unauthorized"},
		{"oversize payload", "POST", "/v1/stores/a1/jobs", h.KeyAcme, fmt.Sprintf(`{"task_no":"BAD-4","printer":"kitchen","payload":%q}`, big), 413, "payload_too_large"},
		{"oversize document", "POST", "/v1/stores/a1/jobs", h.KeyAcme, fmt.Sprintf(`{"task_no":"BAD-5","printer":"kitchen","document":%s}`, bigDoc), 413, "payload_too_large"},
		{"oversize request", "POST", "/v1/stores/a1/jobs", h.KeyAcme, `{"task_no":"BAD-6","printer":"kitchen","payload":"` + strings.Repeat("A", 3<<20) + `"}`, 413, "payload_too_large"},
		{"bad document", "POST", "/v1/stores/a1/jobs", h.KeyAcme, `{"task_no":"BAD-7","printer":"kitchen","document":{"lines":[{"barcode_of_doom":1}]}}`, 400, "bad_document"},
		{"document not an object", "POST", "/v1/stores/a1/jobs", h.KeyAcme, `{"task_no":"BAD-8","printer":"kitchen","document":"lines"}`, 400, "bad_document"},
		{"bad payload base64", "POST", "/v1/stores/a1/jobs", h.KeyAcme, `{"task_no":"BAD-9","printer":"kitchen","payload":"!!!"}`, 400, "bad_payload"},
		{"task_no space", "POST", "/v1/stores/a1/jobs", h.KeyAcme, job("BAD 10"), 400, "invalid_task"},
		{"task_no subject wildcard", "POST", "/v1/stores/a1/jobs", h.KeyAcme, job("a1.>"), 400, "invalid_task"},
		{"task_no star", "POST", "/v1/stores/a1/jobs", h.KeyAcme, job("*"), 400, "invalid_task"},
		{"task_no key escape", "POST", "/v1/stores/a1/jobs", h.KeyAcme, job("BAD=2E11"), 400, "invalid_task"},
		{"task_no slash", "POST", "/v1/stores/a1/jobs", h.KeyAcme, job("../r1/BAD-12"), 400, "invalid_task"},
		{"task_no unicode", "POST", "/v1/stores/a1/jobs", h.KeyAcme, job("BAD-é"), 400, "invalid_task"},
		{"task_no 129", "POST", "/v1/stores/a1/jobs", h.KeyAcme, job(strings.Repeat("B", 129)), 400, "invalid_task"},
		{"task_no empty", "POST", "/v1/stores/a1/jobs", h.KeyAcme, job(""), 400, "invalid_task"},
		{"bad json", "POST", "/v1/stores/a1/jobs", h.KeyAcme, `{"task_no":"BAD-13",`, 400, "bad_json"},
		{"json array", "POST", "/v1/stores/a1/jobs", h.KeyAcme, `[1,2]`, 400, "bad_json"},
		{"trailing data", "POST", "/v1/stores/a1/jobs", h.KeyAcme, job("BAD-14") + `{}`, 400, "bad_json"},
		{"unknown field", "POST", "/v1/stores/a1/jobs", h.KeyAcme, `{"task_no":"BAD-15","printer":"kitchen","document":` + doc + `,"store":"r1"}`, 400, "unknown_field"},
		{"bad timeout", "POST", "/v1/stores/a1/jobs", h.KeyAcme, `{"task_no":"BAD-16","printer":"kitchen","document":` + doc + `,"timeout":"100h"}`, 400, "bad_timeout"},
		{"bad printer", "POST", "/v1/stores/a1/jobs", h.KeyAcme, `{"task_no":"BAD-17","printer":"k/../x","document":` + doc + `}`, 400, "invalid_task"},
		{"bad task_no read", "GET", "/v1/stores/a1/jobs/BAD%20X", h.KeyAcme, "", 400, "invalid_task"},
	}
	for _, c := range cases {
		code, body, _ := h.call(t, c.method, c.path, c.key, c.body)
		if code != c.status || hubErrCode(body) != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, code, trim(body), c.status, c.code)
		}
		if strings.Contains(body, secret) || strings.Contains(body, "rival") {
			t.Errorf("%s: the answer to acme's key carries the rival tenant's data: %s", c.name, trim(body))
		}
	}

	// Another tenant's store is answered exactly as a store that does not
	// exist: the same status, code and words but for the id.
	_, unknown, _ := h.call(t, "GET", "/v1/stores/zz/jobs/"+secret, h.KeyAcme, "")
	_, foreign, _ := h.call(t, "GET", "/v1/stores/r1/jobs/"+secret, h.KeyAcme, "")
	if strings.ReplaceAll(unknown, "zz", "ID") != strings.ReplaceAll(foreign, "r1", "ID") {
		t.Errorf("another tenant's store is told apart from an unknown one:\n unknown %s\n foreign %s", unknown, foreign)
	}
	// The store list shows only the key's tenant.
	if code, body, _ := h.call(t, "GET", "/v1/stores", h.KeyAcme, ""); code != 200 || strings.Contains(body, "r1") || strings.Contains(body, "rival") || !strings.Contains(body, `"a1"`) {
		t.Errorf("store list of acme: %d %s", code, trim(body))
	}

	// Nothing stored: acme's a1 has its one good job, a2 none, and the
	// rival's store still holds its job alone, unchanged.
	if got := h.taskNos(t, "a1", h.KeyAcme); len(got) != 1 || got[0] != "GOOD-1" {
		t.Errorf("a1's jobs after the bad input: %v, want [GOOD-1]", got)
	}
	if got := h.taskNos(t, "a2", h.KeyAcme); len(got) != 0 {
		t.Errorf("a2's jobs: %v, want none", got)
	}
	if got := h.taskNos(t, "r1", h.KeyRival); len(got) != 1 || got[0] != secret {
		t.Errorf("r1's jobs: %v, want [%s]", got, secret)
	}
	var rj struct {
		State    string            `json:"state"`
		Timeline []json.RawMessage `json:"timeline"`
	}
	_, body, _ := h.call(t, "GET", "/v1/stores/r1/jobs/"+secret, h.KeyRival, "")
	if err := json.Unmarshal([]byte(body), &rj); err != nil || rj.State != "STORED" || len(rj.Timeline) != 1 {
		t.Errorf("the rival's job after acme's attempts: %s, want STORED with one timeline entry", body)
	}

	// Wrong keys: 401 up to the tenth within a minute, then 429 with
	// Retry-After for every request without a right key; the right key
	// still passes, and nothing was stored by the guesses.
	for i := 1; i <= 10; i++ {
		code, body, _ := h.call(t, "POST", "/v1/stores/a1/jobs", fmt.Sprintf("pgk_guess%02d", i), job(fmt.Sprintf("GUESS-%d", i)))
		if code != 401 || hubErrCode(body) != "unauthorized" {
			t.Fatalf("wrong key %d: %d %s, want 401 unauthorized", i, code, trim(body))
		}
	}
	code, body, hdr := h.call(t, "POST", "/v1/stores/a1/jobs", "pgk_guess11", job("GUESS-11"))
	if code != 429 || hubErrCode(body) != "too_many_requests" || hdr.Get("Retry-After") == "" {
		t.Errorf("the 11th wrong key: %d %s Retry-After %q, want 429 too_many_requests with Retry-After", code, trim(body), hdr.Get("Retry-After"))
	}
	if code, _, _ := h.call(t, "GET", "/v1/stores/a1/jobs", "", ""); code != 429 {
		t.Errorf("no key after the throttle: %d, want 429", code)
	}
	if code, body, _ := h.call(t, "POST", "/v1/stores/a1/jobs", h.KeyAcme, job("GOOD-2")); code != 202 {
		t.Errorf("the right key while the address is throttled: %d %s, want 202", code, trim(body))
	}
	if got := h.taskNos(t, "a1", h.KeyAcme); strings.Join(got, ",") != "GOOD-1,GOOD-2" {
		t.Errorf("a1's jobs after the guesses: %v, want [GOOD-1 GOOD-2]", got)
	}
}

// trim shortens an answer for a failure message.
func trim(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
