package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"printgate/drivers/printertest"
)

// TestFlakyLinkDoesNotReprintInALoop runs the real binary against a
// printer that prints each ticket and then drops the link before it
// answers the completion probe: the agent cannot know the ticket printed.
// Every such outcome counts toward max_unknown (2 by default), with a
// backoff between copies, so the ticket goes HELD with REPEATED_UNKNOWN
// after two copies instead of reprinting until its deadline (63 copies in
// 60 s when a lost link did not count), and the printer's next ticket
// prints once the link holds.
func TestFlakyLinkDoesNotReprintInALoop(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := buildPrintgate(t)
	config, _, base, p := promiseSetup(t)
	if err := p.SetFault(printertest.FaultDropAfterCut, true); err != nil {
		t.Fatal(err)
	}
	proc := startAgent(t, bin, config, base)
	defer proc.kill(t)
	start := time.Now()
	if code := submit(base, promiseToken, "LOOP_v1", "k"); code != 202 {
		t.Fatalf("submit: HTTP %d", code)
	}
	copies := func() int {
		n := 0
		for _, tk := range p.Tickets() {
			if tk.Contains("TICKET LOOP_v1") {
				n++
			}
		}
		return n
	}
	var got taskState
	for {
		got = getState(t, base, "LOOP_v1")
		if got.State == "HELD" || time.Since(start) > 15*time.Second {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got.State != "HELD" || got.Reason != "REPEATED_UNKNOWN" {
		t.Fatalf("after %s the task is %+v with %d copies printed; want HELD REPEATED_UNKNOWN after 2", time.Since(start).Round(time.Second), got, copies())
	}
	n := copies()
	t.Logf("held after %d copies in %s", n, time.Since(start).Round(10*time.Millisecond))
	if n != 2 {
		t.Errorf("%d copies printed before HELD, want 2 (max_unknown)", n)
	}
	if err := p.SetFault(printertest.FaultDropAfterCut, false); err != nil {
		t.Fatal(err)
	}
	if code := submit(base, promiseToken, "NEXT_v1", "k"); code != 202 {
		t.Fatalf("submit: HTTP %d", code)
	}
	waitState(t, base, promiseToken, "NEXT_v1", "PRINTED")
	if n2 := copies(); n2 != n {
		t.Errorf("the HELD task printed again: %d copies", n2)
	}
	if logs := proc.logs.String(); !strings.Contains(logs, "REPEATED_UNKNOWN") {
		t.Errorf("no log line says the task was held:\n%s", logs)
	}
}

// getState reads taskNo's state and reason once.
func getState(t *testing.T, base, taskNo string) taskState {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/v1/tasks/"+taskNo, nil)
	req.Header.Set("Authorization", "Bearer "+promiseToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v taskState
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("get %s: %d %v", taskNo, resp.StatusCode, err)
	}
	return v
}
