package hostile

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A POS that wrote its ticket cleanly never loses it without a word. A POS
// that keeps its connection open and gets a FIN (the port reopened by a
// reload, the agent stopping, 5 minutes without a job) writes its next
// ticket into the closed connection without an error; a port that reads a
// job and then refuses it resets a write-and-close POS that has already
// gone. These tests fail if either comes back.

// A reload that reopens the port while a POS keeps a connection open with
// its setup bytes (ESC @, ESC t 0) sent: the connection is reset, so the
// POS's next write fails and it reconnects. Before the fix it got a FIN,
// and the ticket it wrote next was lost.
func TestRawReloadResetsAKeptOpenConnection(t *testing.T) {
	t.Parallel()
	a := start(t, Setup{Raw: true, Printer: "raw_idle_gap = \"2s\"\n"})
	c, err := dialRawFrom(t, a, "127.0.0.2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte{0x1b, '@', 0x1b, 't', 0}); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(a.Config)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(cfg), "raw_idle_gap = \"2s\"", "raw_idle_gap = \"3s\"", 1)
	if err := os.WriteFile(a.Config, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.Copy(io.Discard, c)
	if !isReset(err) {
		t.Fatalf("the kept-open connection ended with %v at the reload, want a reset (a FIN lets the POS's next ticket go unheard)", err)
	}
	// The POS's next ticket fails on its write: it is not lost unheard.
	if _, err := c.Write(rawTicket("AFTER RELOAD")); err == nil {
		t.Fatal("the POS's write after the reset succeeded")
	}
	waitLog(t, a, "a connection kept open is reset")
}

// With the disk down to keep_free, the port reads no job: a POS that wrote
// its ticket and waits for the close is left waiting (its ticket unread,
// not refused), /healthz is degraded naming the raw port, and the agent
// warns. Before the fix the port read the job, the spool refused it and the
// POS got a reset after it had finished: a write-and-close POS took that
// for printed.
func TestRawDiskLowLeavesPOSWaiting(t *testing.T) {
	t.Parallel()
	a := start(t, Setup{Raw: true, Tables: "[spool]\nkeep_free = \"1000TiB\"\n"})
	c, err := dialRawFrom(t, a, "127.0.0.2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(rawTicket("DISK LOW")); err != nil {
		t.Fatal(err)
	}
	c.CloseWrite()
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err = io.Copy(io.Discard, c)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the POS's connection ended with %v while the disk is low, want it left waiting", err)
	}
	if strings.Contains(a.Logs(), "RAW JOB REFUSED") {
		t.Fatal("the port read the job and refused it")
	}
	waitLog(t, a, "RAW PORT NOT ACCEPTING")
	resp, err := http.Get(a.Base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `"degraded"`) || !strings.Contains(string(body), "raw port of printer p0") {
		t.Fatalf("/healthz says %s, want degraded naming p0's raw port", body)
	}
}
