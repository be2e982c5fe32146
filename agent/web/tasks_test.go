package web

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"printgate/agent/api"
	"printgate/spool"
)

var taskRow = regexp.MustCompile(`<tr data-task="([^"]+)"`)

func rows(body string) []string {
	var out []string
	for _, m := range taskRow.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestTaskSearch ensures the list finds a task by task_no or by an order
// number inside its document, filters by state and time, and says when the
// search stopped at its scan limit.
func TestTaskSearch(t *testing.T) {
	h := newHarness(t)
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.Local)
	h.f.add("POS1-0001", spool.StatePrinted, base, `{"lines":[{"text":"Order A-1001"}]}`)
	h.f.add("POS1-0002", spool.StateHeld, base.Add(time.Hour), `{"lines":[{"text":"Order B-2002"}]}`)
	h.f.add("POS2-0003", spool.StatePrinted, base.Add(2*time.Hour), `{"lines":[{"text":"Order a-1001-x"}]}`)
	c := h.session()

	w := h.get(c, "/tasks")
	wantStatus(t, w, http.StatusOK)
	wantBody(t, w, `id="tasks"`, `id="task-filter"`)
	if got := strings.Join(rows(w.Body.String()), ","); got != "POS2-0003,POS1-0002,POS1-0001" {
		t.Fatalf("all tasks, newest first: %s", got)
	}
	for q, want := range map[string]string{
		"B-2002":   "POS1-0002",           // order number in the document
		"a-1001":   "POS2-0003,POS1-0001", // any case
		"POS1":     "POS1-0002,POS1-0001", // task_no substring
		"nowhere9": "",
	} {
		w := h.get(c, "/tasks?q="+url.QueryEscape(q))
		if got := strings.Join(rows(w.Body.String()), ","); got != want {
			t.Errorf("q=%s: %s, want %s", q, got, want)
		}
	}
	w = h.get(c, "/tasks?state=HELD")
	if got := strings.Join(rows(w.Body.String()), ","); got != "POS1-0002" {
		t.Errorf("state=HELD: %s", got)
	}
	wantBody(t, w, `<option value="HELD" selected>`)
	from := base.Add(30 * time.Minute).Format(timeLayout)
	to := base.Add(time.Hour).Format(timeLayout)
	w = h.get(c, "/tasks?from="+url.QueryEscape(from)+"&to="+url.QueryEscape(to))
	if got := strings.Join(rows(w.Body.String()), ","); got != "POS1-0002" {
		t.Errorf("from %s to %s: %s", from, to, got)
	}
	// The filter shows its times in ISO, as the page shows dates, in a
	// field of its own (a datetime-local input showed mm/dd/yyyy), and
	// takes the T form of older links too.
	wantBody(t, w, `name="from" value="`+from+`"`, `type="text" name="from"`)
	tForm := base.Add(30 * time.Minute).Format("2006-01-02T15:04")
	if got := strings.Join(rows(h.get(c, "/tasks?from="+tForm+"&to="+url.QueryEscape(to)).Body.String()), ","); got != "POS1-0002" {
		t.Errorf("from %s (T form) to %s: %s", tForm, to, got)
	}
	wantBody(t, h.get(c, "/tasks?from=yesterday"), catalog["tasks.badtime"].en)
	// Flags.
	h.f.mu.Lock()
	h.f.tasks[0].PossibleDuplicate = true
	h.f.tasks[2].ReprintOf = "POS1-0001"
	h.f.tasks[1].Truncated = true
	h.f.mu.Unlock()
	wantBody(t, h.get(c, "/tasks"), "POSSIBLE DUPLICATE", "REPRINT of POS1-0001", "INCOMPLETE JOB")
	wantBody(t, h.get(c, "/tasks/POS1-0002"), `data-field="truncated"`, "Print the order again from the POS")
}

// TestTaskSearchScanLimit ensures a search reads at most its limit of tasks
// and offers to go on from where it stopped.
func TestTaskSearchScanLimit(t *testing.T) {
	h := newHarness(t)
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.Local)
	h.f.add("OLD-MATCH", spool.StatePrinted, base, `{"order":"Z-77"}`)
	for i := range MaxSearchScan + 10 {
		h.f.add(fmt.Sprintf("T%05d", i), spool.StatePrinted, base.Add(time.Duration(i+1)*time.Second), `{}`)
	}
	c := h.session()
	w := h.get(c, "/tasks?q=Z-77")
	wantBody(t, w, `id="scan-limit"`, fmt.Sprint(MaxSearchScan))
	if got := rows(w.Body.String()); len(got) != 0 {
		t.Fatalf("found %v before the limit", got)
	}
	next := regexp.MustCompile(`id="next-page" href="([^"]+)"`).FindStringSubmatch(w.Body.String())
	if next == nil {
		t.Fatal("no link to search on")
	}
	w = h.get(c, strings.ReplaceAll(next[1], "&amp;", "&"))
	if got := strings.Join(rows(w.Body.String()), ","); got != "OLD-MATCH" {
		t.Fatalf("second search: %s", got)
	}
	if strings.Contains(w.Body.String(), `id="scan-limit"`) {
		t.Fatal("the second search claims the limit too")
	}
}

// TestTaskPaging ensures the plain list pages with the spool's cursor.
func TestTaskPaging(t *testing.T) {
	h := newHarness(t)
	for i := range tasksPerPage + 5 {
		h.f.add(fmt.Sprintf("P%03d", i), spool.StatePrinted, time.Now(), "")
	}
	c := h.session()
	w := h.get(c, "/tasks")
	first := rows(w.Body.String())
	if len(first) != tasksPerPage || first[0] != fmt.Sprintf("P%03d", tasksPerPage+4) {
		t.Fatalf("first page: %d rows from %v", len(first), first[:1])
	}
	next := regexp.MustCompile(`id="next-page" href="([^"]+)"`).FindStringSubmatch(w.Body.String())
	w = h.get(c, strings.ReplaceAll(next[1], "&amp;", "&"))
	if got := strings.Join(rows(w.Body.String()), ","); got != "P004,P003,P002,P001,P000" {
		t.Fatalf("second page: %s", got)
	}
	if strings.Contains(w.Body.String(), `id="next-page"`) {
		t.Fatal("a next link on the last page")
	}
}

// TestTaskPage ensures the timeline, the preview and the allowed actions.
func TestTaskPage(t *testing.T) {
	h := newHarness(t)
	at := time.Now()
	printed := h.f.add("T-PRINTED", spool.StatePrinted, at, "")
	printed.Confirmation = spool.ConfirmPrinted
	h.f.add("T-QUEUED", spool.StateQueued, at, "")
	h.f.add("T-TIMEDOUT", spool.StateTimedOut, at, "")
	h.f.add("T-FAILED", spool.StateFailed, at, "")
	c := h.session()

	w := h.get(c, "/tasks/T-PRINTED")
	wantStatus(t, w, http.StatusOK)
	wantBody(t, w, `id="task"`, `data-task-state="PRINTED"`, `id="timeline"`, `id="preview"`,
		`<div class="paper paper-48"><div class="row">T-PRINTED</div></div>`, catalog["confirm.printed"].en, "NO_ACK", `id="reprint"`)
	if n := strings.Count(w.Body.String(), "<li data-state="); n != 2 {
		t.Fatalf("%d timeline entries, want 2", n)
	}
	for no, want := range map[string][]string{
		"T-PRINTED":  {"reprint"},
		"T-QUEUED":   {"cancel"},
		"T-TIMEDOUT": {"reprint", "retry"},
	} {
		body := h.get(c, "/tasks/"+no).Body.String()
		for _, a := range []string{"reprint", "retry", "cancel"} {
			shown := strings.Contains(body, `id="`+a+`"`)
			if shown != strings.Contains(strings.Join(want, " "), a) {
				t.Errorf("%s: action %s shown=%v", no, a, shown)
			}
		}
	}
	wantBody(t, h.get(c, "/tasks/T-FAILED"), "cannot decode the payload")
	wantStatus(t, h.get(c, "/tasks/NOPE"), http.StatusNotFound)
	wantStatus(t, h.get(c, "/tasks/T-QUEUED/explode"), http.StatusNotFound)
	// The retry confirmation offers every printer, its own selected.
	w = h.get(c, "/tasks/T-TIMEDOUT/retry")
	wantBody(t, w, `id="confirm"`, `name="printer"`, `<option value="kitchen" selected>`, `<option value="bar">`, `type="submit"`)
}

// TestTaskActions ensures each action calls the backend and flashes the
// outcome once on the resulting task's page, including a refusal.
func TestTaskActions(t *testing.T) {
	h := newHarness(t)
	h.f.add("T1", spool.StatePrinted, time.Now(), "")
	h.f.add("T2", spool.StateQueued, time.Now(), "")
	h.f.add("T3", spool.StateTimedOut, time.Now(), "")
	c := h.session()

	w := h.post(c, "/tasks/T1/reprint", nil)
	wantRedirect(t, w, "/tasks/T1-r1")
	page := h.get(c, w.Header().Get("Location"))
	wantBody(t, page, `id="flash"`, "Reprint queued as task T1-r1")
	if strings.Contains(h.get(c, "/tasks/T1-r1").Body.String(), `id="flash"`) {
		t.Fatal("the flash showed twice")
	}

	w = h.post(c, "/tasks/T3/retry", url.Values{"printer": {"bar"}})
	wantRedirect(t, w, "/tasks/T3-r2")
	wantBody(t, h.get(c, "/tasks/T3-r2"), "Retry queued as task T3-r2")

	w = h.post(c, "/tasks/T3/retry", url.Values{"printer": {"garage"}})
	wantRedirect(t, w, "/tasks/T3")
	wantBody(t, h.get(c, "/tasks/T3"), `id="flash"`, "There is no printer garage")

	w = h.post(c, "/tasks/T2/cancel", nil)
	wantRedirect(t, w, "/tasks/T2")
	wantBody(t, h.get(c, "/tasks/T2"), "Task T2 was canceled.")

	h.f.mu.Lock()
	h.f.errs["cancel"] = fmt.Errorf("cancel T2: task is SENDING: %w", api.ErrConflict)
	h.f.mu.Unlock()
	w = h.post(c, "/tasks/T2/cancel", nil)
	wantRedirect(t, w, "/tasks/T2")
	page = h.get(c, "/tasks/T2")
	wantBody(t, page, `class="flash flash-error"`, "task is SENDING", "conflict with task state")

	want := []string{"reprint T1", "retry T3 bar", "cancel T2", "cancel T2"}
	if got := h.f.Calls(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("backend calls %q, want %q", got, want)
	}
}

// TestTaskRetryClickedTwice ensures a second retry of a finished task,
// refused because its first retry prints, takes the manager
// to that version's page with a flash naming it, instead of printing a
// second copy or leaving them on a bare error.
func TestTaskRetryClickedTwice(t *testing.T) {
	h := newHarness(t)
	h.f.add("T3", spool.StateTimedOut, time.Now(), "")
	c := h.session()
	w := h.post(c, "/tasks/T3/retry", nil)
	wantRedirect(t, w, "/tasks/T3-r1")
	h.get(c, "/tasks/T3-r1") // the first click's flash

	h.f.mu.Lock()
	h.f.errs["retry"] = fmt.Errorf("retry T3: %w", &api.RetryExists{TaskNo: "T3", Version: "T3-r1", State: "QUEUED"})
	h.f.mu.Unlock()
	w = h.post(c, "/tasks/T3/retry", nil)
	wantRedirect(t, w, "/tasks/T3-r1")
	wantBody(t, h.get(c, "/tasks/T3-r1"), `class="flash flash-error"`, "Not retried: task T3 already has version T3-r1 (QUEUED)")
	if n := len(h.f.Calls()); n != 2 {
		t.Errorf("backend calls %q, want the two retries", h.f.Calls())
	}
}
