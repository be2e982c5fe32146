package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"printgate/hub"
	"printgate/hub/config"
	"printgate/hub/store"
	"printgate/hub/webhook"
)

// TestWebhookAddCommand: `webhook add` refuses an http URL to a host that
// is not loopback (exit 2, a fix line, nothing stored) and an unknown
// tenant (exit 1), and prints a whsec_ secret once for a good one.
func TestWebhookAddCommand(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "hub.toml")
	if err := os.WriteFile(cfgPath, []byte("data_dir = \"data\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := dispatch(args, &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, _, e := run("tenant", "add", "--config", cfgPath, "--id", "acme"); code != 0 {
		t.Fatalf("tenant add = %d: %s", code, e)
	}
	if code, out, e := run("webhook", "add", "--config", cfgPath, "--tenant", "acme", "--url", "http://orders.example.com/h"); code != 2 || out != "" ||
		!strings.Contains(e, "https://") || !strings.Contains(e, "\nfix: ") {
		t.Errorf("http URL: exit %d, stdout %q, stderr %q; want 2 and a fix line", code, out, e)
	}
	if code, _, e := run("webhook", "add", "--config", cfgPath, "--tenant", "nobody", "--url", "https://orders.example.com/h"); code != 1 || !strings.Contains(e, "fix: ") {
		t.Errorf("unknown tenant: exit %d, stderr %q; want 1 and a fix line", code, e)
	}
	code, out, e := run("webhook", "add", "--config", cfgPath, "--tenant", "acme", "--url", "https://orders.example.com/h")
	if code != 0 || !strings.HasPrefix(out, "whsec_") || !strings.Contains(e, "shown once") {
		t.Fatalf("webhook add: exit %d, stdout %q, stderr %q", code, out, e)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	st, err := hub.OpenStore(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hooks, err := st.Webhooks(context.Background(), "acme")
	if err != nil || len(hooks) != 1 || hooks[0].URL != "https://orders.example.com/h" || hooks[0].Secret != strings.TrimSpace(out) {
		t.Errorf("stored %+v (%v): want the one https endpoint with the printed secret", hooks, err)
	}
}

// hookSink is a webhook receiver for the end-to-end test: it checks each
// delivery's signature (webhook.Verify, as a Standard Webhooks library
// does) and records "task_no state" of the verified ones.
type hookSink struct {
	secret     string
	mu         sync.Mutex
	got        map[string]bool
	unverified int
}

func (h *hookSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := webhook.Verify(h.secret, r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), b, time.Now(), 5*time.Minute); err != nil {
		h.unverified++
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var m store.Message
	if err := json.Unmarshal(b, &m); err == nil {
		if h.got == nil {
			h.got = map[string]bool{}
		}
		h.got[m.Data.TaskNo+" "+m.Data.State] = true
	}
	w.WriteHeader(http.StatusNoContent)
}

// wait waits until every one of want arrived verified.
func (h *hookSink) wait(t *testing.T, want ...string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		h.mu.Lock()
		missing := []string{}
		for _, w := range want {
			if !h.got[w] {
				missing = append(missing, w)
			}
		}
		bad := h.unverified
		h.mu.Unlock()
		if bad > 0 {
			t.Fatalf("%d webhooks failed their signature check", bad)
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhooks %v never arrived", missing)
		}
		time.Sleep(20 * time.Millisecond) // another process's requests
	}
}
