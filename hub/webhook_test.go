package hub

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"printgate/hub/config"
	"printgate/hub/store"
	"printgate/hub/webhook"
)

// TestWebhookThroughTheHub: an endpoint added with the tenant's API key
// gets the STORED state change of a job submitted through the order API,
// signed with the secret the API showed, and /metrics counts it
// delivered: the hub runs the sender.
func TestWebhookThroughTheHub(t *testing.T) {
	cfg := &config.Config{DataDir: filepath.Join(t.TempDir(), "hub"), Listen: "127.0.0.1:0", Node: "n1",
		Retention: config.DefaultRetention, MaxStoreMB: 256}
	h, err := Start(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- h.Serve() }()
	defer func() {
		h.Close()
		<-served
	}()
	defer http.DefaultClient.CloseIdleConnections()
	ctx := context.Background()
	if _, err := h.st.AddTenant(ctx, "acme", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.AddStore(ctx, "acme", "s1", ""); err != nil {
		t.Fatal(err)
	}
	_, key, err := h.st.AddAPIKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		id, ts, sig string
		body        []byte
	}
	var mu sync.Mutex
	var seen []got
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, got{r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), b})
		mu.Unlock()
	}))
	defer rcv.Close()
	base := "http://" + h.Addr().String()
	call := func(path, body string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	st, v := call("/v1/webhooks", `{"url":"`+rcv.URL+`/hook"}`)
	if st != http.StatusCreated {
		t.Fatalf("add webhook = %d %v", st, v)
	}
	secret, _ := v["secret"].(string)
	if st, v := call("/v1/stores/s1/jobs", `{"task_no":"W1","printer":"k","document":{"lines":[{"text":"x"}]}}`); st != http.StatusAccepted {
		t.Fatalf("submit = %d %v", st, v)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no webhook within 15 s of the submit")
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	g := seen[0]
	mu.Unlock()
	if err := webhook.Verify(secret, g.id, g.ts, g.sig, g.body, time.Now(), time.Minute); err != nil {
		t.Fatal(err)
	}
	var m store.Message
	if err := json.Unmarshal(g.body, &m); err != nil || m.Data.TaskNo != "W1" || m.Data.State != store.StateStored || m.Data.Store != "s1" {
		t.Fatalf("body %s (%v)", g.body, err)
	}
	// The delivery is counted once the sender recorded it.
	deadline = time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		text, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(text), `printgate_hub_webhook_deliveries_total{result="delivered"} 1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics does not count the delivery:\n%s", text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
