package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"printgate/hub/webhook"
	"printgate/internal/proctest"
)

// TestSinkVerifiesAndPrints runs the receiver on loopback and ensures a
// message signed with the endpoint's secret is answered 204 and printed
// as one line (type, store/task_no, state, origin, webhook-id), and a
// forged one is answered 401 and printed as refused, so the hub retries
// it.
func TestSinkVerifiesAndPrints(t *testing.T) {
	secret, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "secret")
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(proctest.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	out, errs := &proctest.Buffer{}, &proctest.Buffer{}
	done := make(chan int)
	go func() { done <- run(ctx, []string{"-listen", addr, "-secret-file", file}, out, errs) }()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit %d: %s", code, errs.String())
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sink does not listen: %v\n%s", err, errs.String())
		}
		time.Sleep(10 * time.Millisecond) // its listener is another goroutine's
	}
	body := `{"type":"job.state_changed","timestamp":"2026-12-03T10:00:00Z","data":{"store":"s1","task_no":"T-1_K_v1","state":"PARKED","reason":"DEVICE_OFFLINE","origin":"cloud","attempts":1,"n":3,"at":"2026-12-03T10:00:00Z"}}`
	post := func(id, sig string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+addr+"/printgate", strings.NewReader(body))
		req.Header.Set("webhook-id", id)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(time.Now().Unix(), 10))
		req.Header.Set("webhook-signature", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	defer http.DefaultClient.CloseIdleConnections()
	sig, err := webhook.Sign(secret, "msg_good", time.Unix(time.Now().Unix(), 0), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if code := post("msg_good", sig); code != http.StatusNoContent {
		t.Errorf("signed message answered %d, want 204", code)
	}
	if code := post("msg_forged", "v1,"+strings.Repeat("A", 44)); code != http.StatusUnauthorized {
		t.Errorf("forged message answered %d, want 401", code)
	}
	for _, want := range []string{
		"webhook ← job.state_changed s1/T-1_K_v1 PARKED (DEVICE_OFFLINE), origin cloud (signature verified, webhook-id msg_good)",
		"webhook refused (",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "verified, webhook-id msg_forged") {
		t.Errorf("the forged message was taken:\n%s", out.String())
	}
}

// TestSinkUsageSaysFix ensures a non-loopback address and a missing secret
// are usage mistakes (exit 2) whose last line is a fix.
func TestSinkUsageSaysFix(t *testing.T) {
	for _, args := range [][]string{
		{"-listen", "0.0.0.0:18650", "-secret-file", "x"},
		{"-listen", "127.0.0.1:18650", "-secret-file", filepath.Join(t.TempDir(), "none")},
	} {
		var out, errs strings.Builder
		code := run(context.Background(), args, &out, &errs)
		lines := strings.Split(strings.TrimSpace(errs.String()), "\n")
		if code != 2 || !strings.HasPrefix(lines[len(lines)-1], "fix: ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a last line fix:", args, code, errs.String())
		}
	}
}
