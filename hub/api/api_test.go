package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"printgate/hub/store"
	"printgate/internal/apispec"
	"printgate/internal/clock"
)

// rig is an API over a real embedded store with two tenants: "acme" with
// store "s1" and key acmeKey, "rival" with store "r1" and key rivalKey.
type rig struct {
	st                *store.Store
	url               string
	acmeKey, rivalKey string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Dir: t.TempDir(), Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &rig{st: st}
	for _, x := range []struct {
		tenant, store string
		key           *string
	}{{"acme", "s1", &r.acmeKey}, {"rival", "r1", &r.rivalKey}} {
		if _, err := st.AddTenant(ctx, x.tenant, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AddStore(ctx, x.tenant, x.store, ""); err != nil {
			t.Fatal(err)
		}
		if _, *x.key, err = st.AddAPIKey(ctx, x.tenant); err != nil {
			t.Fatal(err)
		}
	}
	spec, err := apispec.LoadHub()
	if err != nil {
		t.Fatal(err)
	}
	// Every answer of every test is held to docs/hub-openapi.yaml.
	srv := httptest.NewServer(spec.Handler(New(st, Options{}), func(err error) { t.Error(err) }))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

// do sends a request and returns the status and the decoded body.
func (r *rig) do(t *testing.T, method, path, key, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, r.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var v map[string]any
	json.Unmarshal(data, &v)
	return resp.StatusCode, v
}

func code(v map[string]any) string {
	e, _ := v["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

const doc = `{"lines":[{"text":"hello"},{"cut":"partial"}]}`

// TestSubmitAndDuplicate ensures a job is 202 STORED, the same task_no
// again is 200 duplicate with its current state (a reformatted document
// too), and the same task_no with another printer or content is 409,
// never a second job.
func TestSubmitAndDuplicate(t *testing.T) {
	r := newRig(t)
	body := `{"task_no":"A_v1","printer":"kitchen","document":` + doc + `}`
	if st, v := r.do(t, "POST", "/v1/stores/s1/jobs", r.acmeKey, body); st != 202 || v["state"] != "STORED" || v["duplicate"] != false {
		t.Fatalf("submit: %d %v", st, v)
	}
	spaced := `{"task_no":"A_v1", "printer":"kitchen", "document": {"lines": [{"text": "hello"}, {"cut": "partial"}]}}`
	if st, v := r.do(t, "POST", "/v1/stores/s1/jobs", r.acmeKey, spaced); st != 200 || v["duplicate"] != true || v["state"] != "STORED" {
		t.Fatalf("resend: %d %v; want 200 duplicate STORED", st, v)
	}
	for _, b := range []string{
		`{"task_no":"A_v1","printer":"bar","document":` + doc + `}`,
		`{"task_no":"A_v1","printer":"kitchen","document":{"lines":[{"text":"other"}]}}`,
	} {
		if st, v := r.do(t, "POST", "/v1/stores/s1/jobs", r.acmeKey, b); st != 409 || code(v) != CodeConflict {
			t.Errorf("%s: %d %v; want 409 conflict", b, st, v)
		}
	}
	// A known task_no is a duplicate before any other check: a resend
	// with a now-bad timeout still gets its answer.
	if st, v := r.do(t, "POST", "/v1/stores/s1/jobs", r.acmeKey, `{"task_no":"A_v1","printer":"kitchen","document":`+doc+`,"timeout":"9d"}`); st != 200 || v["duplicate"] != true {
		t.Errorf("resend with a bad timeout: %d %v; want 200 duplicate", st, v)
	}
	st, v := r.do(t, "GET", "/v1/stores/s1/jobs/A_v1", r.acmeKey, "")
	if tl, _ := v["timeline"].([]any); st != 200 || v["state"] != "STORED" || len(tl) != 1 {
		t.Fatalf("get: %d %v", st, v)
	}
	if p, err := r.st.Pending(context.Background(), "s1"); err != nil || len(p) != 1 {
		t.Fatalf("pending %v, %v; want one job", p, err)
	}
}

// TestBadInputStoresNothing ensures each kind of bad request is refused
// with its code and leaves nothing stored, and another tenant's store is
// answered as one that does not exist.
func TestBadInputStoresNothing(t *testing.T) {
	r := newRig(t)
	big := base64.StdEncoding.EncodeToString(make([]byte, 1<<20+1))
	for _, c := range []struct {
		name, path, key, body string
		status                int
		code                  string
	}{
		{"no key", "/v1/stores/s1/jobs", "", `{}`, 401, CodeUnauthorized},
		{"wrong key", "/v1/stores/s1/jobs", "pgk_wrong", `{}`, 401, CodeUnauthorized},
		{"unknown store", "/v1/stores/nope/jobs", r.acmeKey, `{"task_no":"B1","printer":"k","document":` + doc + `}`, 404, CodeNotFound},
		{"another tenant's store", "/v1/stores/r1/jobs", r.acmeKey, `{"task_no":"B1","printer":"k","document":` + doc + `}`, 404, CodeNotFound},
		{"not JSON", "/v1/stores/s1/jobs", r.acmeKey, `{"task_no":`, 400, CodeBadJSON},
		{"unknown field", "/v1/stores/s1/jobs", r.acmeKey, `{"task_no":"B1","printer":"k","copies":2,"document":` + doc + `}`, 400, CodeUnknownField},
		{"task_no over the alphabet", "/v1/stores/s1/jobs", r.acmeKey, `{"task_no":"B 1","printer":"k","document":` + doc + `}`, 400, CodeInvalidTask},
		{"bad printer", "/v1/stores/s1/jobs", r.acmeKey, `{"task_no":"B1","printer":"k/1","document":` + doc + `}`, 400, CodeInvalidTask},
		{"both bodies", "/v1/stores/s1/jobs", r.acmeKey, `{"task_no":"B1","printer":"k","payload":"AA==","document":` + doc + `}`, 400, CodeInvalidTask},
		{"bad base64", "/v1/stores/s1/jobs", r.acmeKey, `{"task_no":"B1","printer":"k","payload":"!!"}`, 400, CodeBadPayload},
		{"bad document", "/v1/stores/s1/jobs", r.acmeKey, `{"task_no":"B1","printer":"k","document":{"lines":[{"qr":"x","size":99}]}}`, 400, CodeBadDocument},
		{"bad timeout", "/v1/stores/s1/jobs", r.acmeKey, `{"task_no":"B1","printer":"k","document":` + doc + `,"timeout":"48h"}`, 400, CodeBadTimeout},
		{"oversize payload", "/v1/stores/s1/jobs", r.acmeKey, `{"task_no":"B1","printer":"k","payload":"` + big + `"}`, 413, CodePayloadTooLarge},
		{"oversize request", "/v1/stores/s1/jobs", r.acmeKey, `{"task_no":"B1","printer":"k","payload":"` + big + big + `"}`, 413, CodePayloadTooLarge},
		{"another tenant's job", "/v1/stores/r1/jobs/B1", r.acmeKey, ``, 404, CodeNotFound},
	} {
		method := "POST"
		if strings.Contains(c.path, "/jobs/") {
			method = "GET"
		}
		st, v := r.do(t, method, c.path, c.key, c.body)
		if st != c.status || code(v) != c.code {
			t.Errorf("%s: %d %v; want %d %s", c.name, st, v, c.status, c.code)
		}
		if msg, _ := v["error"].(map[string]any)["message"].(string); msg == "" {
			t.Errorf("%s: no message", c.name)
		}
	}
	for _, s := range []string{"s1", "r1"} {
		if p, err := r.st.Pending(context.Background(), s); err != nil || len(p) != 0 {
			t.Errorf("store %s has pending %v, %v; want nothing stored", s, p, err)
		}
		if _, err := r.st.Task(context.Background(), s, "B1"); err == nil {
			t.Errorf("store %s has B1", s)
		}
	}
	// The rival's own key reaches its own store.
	if st, v := r.do(t, "POST", "/v1/stores/r1/jobs", r.rivalKey, `{"task_no":"B1","printer":"k","document":`+doc+`}`); st != 202 {
		t.Fatalf("rival's own store: %d %v", st, v)
	}
	if st, v := r.do(t, "GET", "/v1/stores/r1/jobs/B1", r.acmeKey, ""); st != 404 || code(v) != CodeNotFound {
		t.Errorf("acme reads rival's job: %d %v; want 404", st, v)
	}

}

// TestPairingApproval ensures a tenant's key approves a pairing code for
// its own store only, the agent's next poll then gets a device token of
// that store (once), and a decided or unknown code is refused.
func TestPairingApproval(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	now := time.Now().UTC()
	dc, uc, err := r.st.NewPairing(ctx, now, time.Minute, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if st, v := r.do(t, "POST", "/v1/stores/r1/pairings/"+uc+"/approve", r.acmeKey, ""); st != 404 || code(v) != CodeNotFound {
		t.Fatalf("approve for another tenant's store: %d %v; want 404", st, v)
	}
	if _, err := r.st.PollPairing(ctx, dc, now); !errors.Is(err, store.ErrPending) {
		t.Fatalf("poll before approval: %v; want pending", err)
	}
	if st, v := r.do(t, "POST", "/v1/stores/s1/pairings/"+strings.ToLower(uc)+"/approve", r.acmeKey, ""); st != 200 || v["approved"] != true {
		t.Fatalf("approve: %d %v", st, v)
	}
	if st, v := r.do(t, "POST", "/v1/stores/s1/pairings/"+uc+"/deny", r.acmeKey, ""); st != 409 || code(v) != CodeConflict {
		t.Fatalf("deny after approval: %d %v; want 409", st, v)
	}
	if st, v := r.do(t, "POST", "/v1/stores/s1/pairings/BBBB-BBBB/approve", r.acmeKey, ""); st != 404 {
		t.Fatalf("unknown code: %d %v; want 404", st, v)
	}
	tok, err := r.st.PollPairing(ctx, dc, now.Add(2*time.Second))
	if err != nil {
		t.Fatalf("poll after approval: %v", err)
	}
	d, err := r.st.AuthDevice(ctx, tok, "agent-1")
	if err != nil || d.Store != "s1" || d.Tenant != "acme" {
		t.Fatalf("the token: %+v, %v; want a device of s1", d, err)
	}
	if _, err := r.st.PollPairing(ctx, dc, now.Add(4*time.Second)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second poll after the token: %v; want the code used up", err)
	}
}

// TestRevokeStoreDevices ensures revoking a store's devices refuses its
// tokens from then on, and another tenant cannot revoke them.
func TestRevokeStoreDevices(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	_, tok, err := r.st.AddDevice(ctx, "s1", "")
	if err != nil {
		t.Fatal(err)
	}
	if st, v := r.do(t, "POST", "/v1/stores/s1/revoke", r.rivalKey, ""); st != 404 {
		t.Fatalf("another tenant revokes: %d %v; want 404", st, v)
	}
	if _, err := r.st.AuthDevice(ctx, tok, "agent-1"); err != nil {
		t.Fatalf("before the revoke: %v", err)
	}
	if st, v := r.do(t, "POST", "/v1/stores/s1/revoke", r.acmeKey, ""); st != 200 || v["revoked"] != float64(1) {
		t.Fatalf("revoke: %d %v; want 1 revoked", st, v)
	}
	if _, err := r.st.AuthDevice(ctx, tok, "agent-1"); !errors.Is(err, store.ErrRevoked) {
		t.Fatalf("after the revoke: %v; want ErrRevoked", err)
	}
}

// TestListStoresOwnTenantOnly ensures GET /v1/stores lists the key's
// tenant's stores only, each with its backlog.
func TestListStoresOwnTenantOnly(t *testing.T) {
	r := newRig(t)
	if st, _ := r.do(t, "POST", "/v1/stores/s1/jobs", r.acmeKey, `{"task_no":"W1","printer":"k","document":`+doc+`}`); st != 202 {
		t.Fatal(st)
	}
	st, v := r.do(t, "GET", "/v1/stores", r.acmeKey, "")
	list, _ := v["stores"].([]any)
	if st != 200 || len(list) != 1 {
		t.Fatalf("stores: %d %v; want acme's one store", st, v)
	}
	s1, _ := list[0].(map[string]any)
	oldest, _ := s1["oldest_waiting"].(map[string]any)
	if s1["store"] != "s1" || s1["online"] != false || s1["backlog"] != float64(1) || oldest["task_no"] != "W1" {
		t.Fatalf("s1: %v; want offline with W1 waiting", s1)
	}
	if st, _ := r.do(t, "GET", "/v1/stores", "", ""); st != 401 {
		t.Fatalf("no key: %d", st)
	}
}

// TestCommandRefusals ensures a command needs an id of the task_no
// alphabet, and is refused 409 not_connected while the store's agent is
// offline (with no link at all here), naming what to do.
func TestCommandRefusals(t *testing.T) {
	r := newRig(t)
	for _, c := range []struct {
		body   string
		status int
		code   string
	}{
		{`{}`, 400, CodeInvalidCommand},
		{`{"id":"a b"}`, 400, CodeInvalidCommand},
		{`{"id":"x","copies":2}`, 400, CodeBadJSON},
		{`{"id":"rp-1"}`, 409, CodeNotConnected},
	} {
		st, v := r.do(t, "POST", "/v1/stores/s1/jobs/A_v1/reprint", r.acmeKey, c.body)
		if st != c.status || code(v) != c.code {
			t.Errorf("%s: %d %v; want %d %s", c.body, st, v, c.status, c.code)
		}
	}
	if st, _ := r.do(t, "POST", "/v1/stores/r1/jobs/A_v1/cancel", r.acmeKey, `{"id":"c1"}`); st != 404 {
		t.Errorf("cancel in another tenant's store: %d; want 404", st)
	}
}

// TestListJobsPages ensures GET /v1/stores/{store}/jobs lists a store's
// jobs in task_no order, pages with next, filters by state, and refuses a
// bad query.
func TestListJobsPages(t *testing.T) {
	r := newRig(t)
	for _, no := range []string{"J3", "J1", "J5", "J2", "J4"} {
		if st, v := r.do(t, "POST", "/v1/stores/s1/jobs", r.acmeKey, `{"task_no":"`+no+`","printer":"k","document":`+doc+`}`); st != 202 {
			t.Fatalf("%s: %d %v", no, st, v)
		}
	}
	var got []string
	after := ""
	for page := 0; page < 5; page++ {
		st, v := r.do(t, "GET", "/v1/stores/s1/jobs?limit=2&after="+after, r.acmeKey, "")
		if st != 200 {
			t.Fatalf("page %d: %d %v", page, st, v)
		}
		jobs, _ := v["jobs"].([]any)
		for _, j := range jobs {
			got = append(got, j.(map[string]any)["task_no"].(string))
		}
		next, _ := v["next"].(string)
		if next == "" {
			break
		}
		after = next
	}
	if strings.Join(got, ",") != "J1,J2,J3,J4,J5" {
		t.Fatalf("pages gave %v; want J1..J5 in order, once each", got)
	}
	if st, v := r.do(t, "GET", "/v1/stores/s1/jobs?state=printed", r.acmeKey, ""); st != 200 || len(v["jobs"].([]any)) != 0 {
		t.Fatalf("state=printed: %d %v; want none", st, v)
	}
	if st, v := r.do(t, "GET", "/v1/stores/s1/jobs?state=STORED,PRINTED", r.acmeKey, ""); st != 200 || len(v["jobs"].([]any)) != 5 {
		t.Fatalf("state=STORED,PRINTED: %d %v; want all 5", st, v)
	}
	for _, q := range []string{"limit=0", "limit=x", "state=a!", "after=a%20b"} {
		if st, v := r.do(t, "GET", "/v1/stores/s1/jobs?"+q, r.acmeKey, ""); st != 400 || code(v) != CodeBadQuery {
			t.Errorf("%s: %d %v; want 400 bad_query", q, st, v)
		}
	}
	if st, _ := r.do(t, "GET", "/v1/stores/r1/jobs", r.acmeKey, ""); st != 404 {
		t.Errorf("another tenant's jobs: %d; want 404", st)
	}
}

// TestWrongKeysThrottled ensures the tenth wrong key within a minute from
// an address is still 401, the next requests without a right key are 429
// with Retry-After for a minute, the right key always passes, and the
// lock ends after the minute.
func TestWrongKeysThrottled(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Dir: t.TempDir(), Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.AddTenant(ctx, "acme", "")
	st.AddStore(ctx, "acme", "s1", "")
	_, key, err := st.AddAPIKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	fc := clock.NewFakeClock(time.Unix(1_800_000_000, 0))
	a := New(st, Options{Clock: fc})
	call := func(k string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/v1/stores/s1/jobs/X1", nil)
		req.RemoteAddr = "192.0.2.7:5000"
		req.Header.Set("Authorization", "Bearer "+k)
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		return rec
	}
	for i := 1; i <= 10; i++ {
		if rec := call("pgk_guess"); rec.Code != 401 {
			t.Fatalf("wrong key %d: %d; want 401", i, rec.Code)
		}
	}
	if rec := call("pgk_guess"); rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("the 11th wrong key: %d %v; want 429 with Retry-After", rec.Code, rec.Header())
	}
	if rec := call(key); rec.Code != 404 {
		t.Fatalf("the right key while locked: %d; want through the throttle (404 for the unknown job)", rec.Code)
	}
	fc.Advance(time.Minute)
	if rec := call("pgk_guess"); rec.Code != 401 {
		t.Fatalf("a minute later: %d; want 401 again", rec.Code)
	}
}

// TestSubmitQuotas: past max_jobs_per_store a submit is 507 store_quota,
// past max_jobs_per_tenant 429 tenant_quota, each with Retry-After and a
// message that says what to do, and nothing is stored; a known task_no is
// still its duplicate; another tenant is not held up.
func TestSubmitQuotas(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Dir: t.TempDir(), Node: "n1", MaxJobsPerStore: 2, MaxJobsPerTenant: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := &rig{st: st}
	for _, x := range []struct {
		tenant string
		stores []string
		key    *string
	}{{"acme", []string{"s1", "s2"}, &r.acmeKey}, {"rival", []string{"r1"}, &r.rivalKey}} {
		st.AddTenant(ctx, x.tenant, "")
		for _, id := range x.stores {
			if _, err := st.AddStore(ctx, x.tenant, id, ""); err != nil {
				t.Fatal(err)
			}
		}
		if _, *x.key, err = st.AddAPIKey(ctx, x.tenant); err != nil {
			t.Fatal(err)
		}
	}
	spec, err := apispec.LoadHub()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(spec.Handler(New(st, Options{}), func(err error) { t.Error(err) }))
	defer srv.Close()
	r.url = srv.URL
	submit := func(storeID, key, no string) (int, map[string]any) {
		return r.do(t, "POST", "/v1/stores/"+storeID+"/jobs", key, `{"task_no":"`+no+`","printer":"kitchen","document":`+doc+`}`)
	}
	for _, no := range []string{"J1", "J2"} {
		if code, v := submit("s1", r.acmeKey, no); code != 202 {
			t.Fatalf("%s: %d %v", no, code, v)
		}
	}
	code, v := submit("s1", r.acmeKey, "J3")
	if msg, _ := v["error"].(map[string]any)["message"].(string); code != 507 || v["error"].(map[string]any)["code"] != CodeStoreQuota ||
		!strings.Contains(msg, "max_jobs_per_store") || !strings.Contains(msg, "holds 2 jobs") {
		t.Fatalf("a third job of s1: %d %v; want 507 store_quota naming max_jobs_per_store", code, v)
	}
	if code, v := submit("s1", r.acmeKey, "J1"); code != 200 || v["duplicate"] != true {
		t.Fatalf("a known task_no at the bound: %d %v; want 200 duplicate", code, v)
	}
	if code, v := submit("s2", r.acmeKey, "K1"); code != 202 {
		t.Fatalf("s2's first job: %d %v", code, v)
	}
	code, v = submit("s2", r.acmeKey, "K2")
	if code != 429 || v["error"].(map[string]any)["code"] != CodeTenantQuota {
		t.Fatalf("the tenant's fourth job: %d %v; want 429 tenant_quota", code, v)
	}
	for _, j := range []string{"s1/jobs/J3", "s2/jobs/K2"} {
		if code, _ := r.do(t, "GET", "/v1/stores/"+j, r.acmeKey, ""); code != 404 {
			t.Errorf("%s after its refusal: %d; want 404, nothing stored", j, code)
		}
	}
	if code, v := submit("r1", r.rivalKey, "J3"); code != 202 {
		t.Fatalf("another tenant's job: %d %v; want 202", code, v)
	}
}
