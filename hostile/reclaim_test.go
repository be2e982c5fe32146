package hostile

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPrintedTicketsMakeRoom is the other side of the floods: the quotas
// and the cap that stop a flood must not stop an honest busy store. A store
// printing logos sends tickets of 64 KiB; the API door's half of a 16 MiB
// spool fits about 90 of them, and retention keeps printed ones for 7 days.
// Each ticket here is printed before the next is sent, 250 in all, nearly
// three times the door's share: every one is accepted (a POS retrying a 507
// as PROTOCOL says would be a lost lunch rush), the oldest printed ones
// lose their body early (reprint answers 410 pruned, the task_no still
// answers duplicate), and the file stays under its cap.
func TestPrintedTicketsMakeRoom(t *testing.T) {
	if testing.Short() {
		t.Skip("prints 250 tickets of 64 KiB")
	}
	const capBytes = 16 << 20
	a := start(t, Setup{Tables: fmt.Sprintf("[spool]\nmax_size = %d\n", capBytes)})
	client := &http.Client{Timeout: 15 * time.Second}
	const n = 250
	refusals := 0
	for i := range n {
		no := fmt.Sprintf("LOGO-%03d", i)
		payload := base64.StdEncoding.EncodeToString(floodJob(no))
		for {
			// A 507 may name the API's quota or the file's room: the
			// spool decides on its file, whose freed pages take a new
			// ticket only in runs long enough until the agent compacts
			// it (PROTOCOL §2 Room at the cap); either counts below.
			code, retry, _, err := apiPostBody(client, a, no, payload)
			if err != nil {
				t.Fatal(err)
			}
			if code == 202 {
				break
			}
			if code != 507 && code != 429 {
				t.Fatalf("ticket %s: HTTP %d", no, code)
			}
			// A POS waits Retry-After and sends the same task_no again;
			// each such wait is a ticket late in the kitchen.
			refusals++
			if refusals > 3 {
				t.Fatalf("ticket %s of %d refused %d times with HTTP %d: printed tickets do not make room\n", no, n, refusals, code)
			}
			secs, _ := strconv.Atoi(retry)
			time.Sleep(time.Duration(max(1, secs)) * time.Second)
		}
		waitPrinted(t, a, no+" FLOOD")
	}
	t.Logf("%d tickets of 64 KiB accepted and printed, %d refusals retried; spool file %d bytes", n, refusals, spoolSize(t, a))
	if size := spoolSize(t, a); size > capBytes {
		t.Errorf("spool file %d bytes, over its cap %d", size, capBytes)
	}
	hdr := map[string]string{"Authorization": "Bearer " + a.Token, "Content-Type": "application/json"}
	code, body, _ := a.do(t, "POST", "/api/v1/tasks/LOGO-000/reprint", "", hdr)
	if code != http.StatusGone || !strings.Contains(body, "pruned") {
		t.Errorf("reprint of the first, long-printed ticket: %d %s; want 410 pruned (its body made room)", code, body)
	}
	payload := base64.StdEncoding.EncodeToString(floodJob("LOGO-000"))
	if code, _, err := apiPost(client, a, "LOGO-000", payload); err != nil || code != 200 {
		t.Errorf("the first ticket's task_no again: HTTP %d %v; want 200 duplicate", code, err)
	}
	if !strings.Contains(a.Logs(), "they can no longer be reprinted") {
		t.Error("the log never said printed tickets lost their body early")
	}
}
