package api

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
)

// TestWebhookEndpoints: an endpoint that is not https (http only to a
// loopback host) is refused 400 bad_webhook_url with the fix and nothing
// stored; a good one is 201 with its id and a whsec_ secret shown once;
// the list shows it without the secret and only to its tenant; another
// tenant's key meets 404 on it; its dead letters list and replay; delete.
func TestWebhookEndpoints(t *testing.T) {
	r := newRig(t)
	for _, bad := range []string{`{"url":"http://orders.example.com/hook"}`, `{"url":"http://10.1.2.3/hook"}`, `{"url":"ftp://x/y"}`, `{"url":""}`} {
		st, v := r.do(t, "POST", "/v1/webhooks", r.acmeKey, bad)
		e, _ := v["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if st != http.StatusBadRequest || code(v) != CodeBadWebhookURL || !strings.Contains(msg, "https://") {
			t.Errorf("POST %s = %d %v, want 400 %s saying https://", bad, st, v, CodeBadWebhookURL)
		}
	}
	if st, v := r.do(t, "POST", "/v1/webhooks", r.acmeKey, `{"url":"https://x/h","events":["all"]}`); st != http.StatusBadRequest || code(v) != CodeUnknownField {
		t.Errorf("unknown field = %d %v", st, v)
	}
	if st, v := r.do(t, "GET", "/v1/webhooks", r.acmeKey, ""); st != http.StatusOK || len(v["webhooks"].([]any)) != 0 {
		t.Fatalf("after refusals: %d %v, want no endpoint stored", st, v)
	}
	if st, _ := r.do(t, "POST", "/v1/webhooks", "", `{"url":"https://x/h"}`); st != http.StatusUnauthorized {
		t.Errorf("no key = %d, want 401", st)
	}

	st, v := r.do(t, "POST", "/v1/webhooks", r.acmeKey, `{"url":"http://127.0.0.1:9/hook"}`)
	if st != http.StatusCreated {
		t.Fatalf("loopback http endpoint = %d %v, want 201", st, v)
	}
	id, _ := v["id"].(string)
	secret, _ := v["secret"].(string)
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if id == "" || !strings.HasPrefix(secret, "whsec_") || err != nil || len(raw) < 24 {
		t.Fatalf("created %v: want an id and whsec_<base64 of 24+ bytes>", v)
	}
	st, v = r.do(t, "GET", "/v1/webhooks", r.acmeKey, "")
	list, _ := v["webhooks"].([]any)
	if st != http.StatusOK || len(list) != 1 {
		t.Fatalf("list = %d %v", st, v)
	}
	if ep := list[0].(map[string]any); ep["id"] != id || ep["secret"] != nil || ep["url"] != "http://127.0.0.1:9/hook" {
		t.Errorf("listed %v: want the id and url, never the secret", ep)
	}
	if _, v := r.do(t, "GET", "/v1/webhooks", r.rivalKey, ""); len(v["webhooks"].([]any)) != 0 {
		t.Errorf("another tenant lists %v", v)
	}
	for _, req := range []struct{ method, path string }{{"GET", "/v1/webhooks/" + id + "/dead"}, {"POST", "/v1/webhooks/" + id + "/dead/replay"}, {"DELETE", "/v1/webhooks/" + id}} {
		if st, v := r.do(t, req.method, req.path, r.rivalKey, ""); st != http.StatusNotFound || code(v) != CodeNotFound {
			t.Errorf("another tenant's %s %s = %d %v, want 404", req.method, req.path, st, v)
		}
	}
	if st, v := r.do(t, "GET", "/v1/webhooks/"+id+"/dead", r.acmeKey, ""); st != http.StatusOK || len(v["dead"].([]any)) != 0 {
		t.Errorf("dead letters = %d %v", st, v)
	}
	if st, v := r.do(t, "POST", "/v1/webhooks/"+id+"/dead/replay", r.acmeKey, ""); st != http.StatusOK || v["replayed"] != float64(0) {
		t.Errorf("replay = %d %v", st, v)
	}
	if st, _ := r.do(t, "DELETE", "/v1/webhooks/"+id, r.acmeKey, ""); st != http.StatusOK {
		t.Errorf("delete = %d", st)
	}
	if _, v := r.do(t, "GET", "/v1/webhooks", r.acmeKey, ""); len(v["webhooks"].([]any)) != 0 {
		t.Errorf("after delete: %v", v)
	}
}
