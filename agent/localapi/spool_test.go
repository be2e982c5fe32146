package localapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"

	"printgate/agent/api"
	"printgate/agent/localapi"
	"printgate/spool"
)

// spoolBackend is the thinnest Backend over a real spool: the answers 413,
// 507 and duplicate come from spool.Accept itself, not from a test double.
type spoolBackend struct {
	s        *spool.Spool
	printers []string
}

var _ localapi.Backend = (*spoolBackend)(nil)

func openSpoolAPI(t *testing.T, opts spool.Options) (*spoolBackend, *client) {
	t.Helper()
	s, err := spool.Open(filepath.Join(t.TempDir(), "spool.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	b := &spoolBackend{s: s, printers: []string{"kitchen", "bar"}}
	return b, newAPI(t, b, localapi.Options{})
}

func (b *spoolBackend) Submit(ctx context.Context, t spool.NewTask) (*spool.Task, bool, error) {
	if !slices.Contains(b.printers, t.Printer) {
		return nil, false, fmt.Errorf("submit %s: printer %q: %w", t.TaskNo, t.Printer, api.ErrUnknownPrinter)
	}
	return b.s.Accept(t)
}

func (b *spoolBackend) Task(taskNo string) (*spool.Task, error) { return b.s.Get(taskNo) }

func (b *spoolBackend) Tasks(o spool.ListOptions) (spool.Page, error) { return b.s.List(o) }

func (b *spoolBackend) Reprint(ctx context.Context, taskNo string) (*spool.Task, error) {
	old, err := b.s.Get(taskNo)
	if err != nil {
		return nil, err
	}
	if old.Pruned {
		return nil, fmt.Errorf("reprint %s: %w", taskNo, spool.ErrPruned)
	}
	if !old.State.Terminal() {
		return nil, fmt.Errorf("reprint %s while %s: %w", taskNo, old.State, api.ErrConflict)
	}
	no := nextVersion(taskNo)
	for {
		t, dup, err := b.s.Accept(spool.NewTask{TaskNo: no, Printer: old.Printer, Priority: old.Priority,
			Origin: spool.OriginManager, Payload: old.Payload, Document: old.Document, ReprintOf: taskNo})
		if err != nil || !dup {
			return t, err
		}
		no = nextVersion(no)
	}
}

func (b *spoolBackend) Cancel(ctx context.Context, taskNo string) (*spool.Task, error) {
	cur, err := b.s.Get(taskNo)
	if err != nil {
		return nil, err
	}
	t, err := b.s.Transition(taskNo, cur.State, spool.StateCanceled, spool.Change{})
	if errors.Is(err, spool.ErrIllegalTransition) {
		return nil, fmt.Errorf("cancel %s: %w", taskNo, api.ErrConflict)
	}
	return t, err
}

func (b *spoolBackend) Printers() []api.PrinterInfo {
	var out []api.PrinterInfo
	for _, p := range b.printers {
		q, _ := b.s.Queue(p)
		out = append(out, api.PrinterInfo{Name: p, State: "READY", Queue: len(q)})
	}
	return out
}

func (b *spoolBackend) Health() api.Health {
	n, _ := b.s.OutboxDepth()
	return api.Health{Status: "ok", Link: "disabled", Outbox: n}
}

// TestOverRealSpool ensures the API's answers hold over the real store:
// accept (fsync'd, seq 1), duplicate with the current state, the task view
// with its timeline, cancel and its 409 from the state table, reprint, the
// list, and the printers' queue counts.
func TestOverRealSpool(t *testing.T) {
	b, c := openSpoolAPI(t, spool.Options{})
	a := c.do("POST", "/api/v1/tasks", payloadTask("ORD-1_KITCHEN_v1", "kitchen", secretPayload))
	wantStatus(t, a, http.StatusAccepted, "")
	var m map[string]any
	if a.decode(t, &m); m["seq"] != 1.0 || m["state"] != "ACCEPTED" || m["duplicate"] != false {
		t.Fatalf("accept answered %s", a.body)
	}
	if _, err := b.s.Transition("ORD-1_KITCHEN_v1", spool.StateAccepted, spool.StateQueued, spool.Change{}); err != nil {
		t.Fatal(err)
	}
	a = c.do("POST", "/api/v1/tasks", payloadTask("ORD-1_KITCHEN_v1", "kitchen", []byte("other")))
	wantStatus(t, a, http.StatusOK, "")
	if a.decode(t, &m); m["state"] != "QUEUED" || m["duplicate"] != true || m["seq"] != 1.0 {
		t.Fatalf("duplicate answered %s", a.body)
	}
	wantStatus(t, c.do("POST", "/api/v1/tasks", `{"task_no":"ORD-2_BAR_v1","printer":"bar","document":{"lines":[{"text":"x"}]}}`), http.StatusAccepted, "")
	wantStatus(t, c.do("POST", "/api/v1/tasks", payloadTask("ORD-3_v1", "patio", []byte("x"))), http.StatusNotFound, "unknown_printer")

	a = c.do("GET", "/api/v1/printers", "")
	if a.decode(t, &m); fmt.Sprint(m["printers"]) != "[map[failover_to: name:kitchen queue:1 state:READY url:] map[failover_to: name:bar queue:1 state:READY url:]]" {
		t.Errorf("printers %s", a.body)
	}

	a = c.do("POST", "/api/v1/tasks/ORD-1_KITCHEN_v1/cancel", "")
	wantStatus(t, a, http.StatusOK, "")
	a = c.do("GET", "/api/v1/tasks/ORD-1_KITCHEN_v1", "")
	wantStatus(t, a, http.StatusOK, "")
	var v struct {
		State    string `json:"state"`
		Timeline []struct {
			State string `json:"state"`
		} `json:"timeline"`
	}
	a.decode(t, &v)
	if v.State != "CANCELED" || len(v.Timeline) != 3 || v.Timeline[2].State != "CANCELED" {
		t.Errorf("after cancel: %s", a.body)
	}
	wantStatus(t, c.do("POST", "/api/v1/tasks/ORD-1_KITCHEN_v1/cancel", ""), http.StatusConflict, "conflict")

	a = c.do("POST", "/api/v1/tasks/ORD-1_KITCHEN_v1/reprint", "")
	wantStatus(t, a, http.StatusAccepted, "")
	if a.decode(t, &m); m["task_no"] != "ORD-1_KITCHEN_v2" || m["reprint_of"] != "ORD-1_KITCHEN_v1" || m["origin"] != "manager" || m["seq"] != 3.0 {
		t.Errorf("reprint answered %s", a.body)
	}
	wantStatus(t, c.do("POST", "/api/v1/tasks/ORD-2_BAR_v1/reprint", ""), http.StatusConflict, "conflict")

	a = c.do("GET", "/api/v1/tasks?state=ACCEPTED&limit=1", "")
	var p struct {
		Tasks []struct {
			TaskNo string `json:"task_no"`
		} `json:"tasks"`
		Next *uint64 `json:"next"`
	}
	a.decode(t, &p)
	if len(p.Tasks) != 1 || p.Tasks[0].TaskNo != "ORD-2_BAR_v1" || p.Next == nil || *p.Next != 2 {
		t.Fatalf("first page %s", a.body)
	}
	a = c.do("GET", fmt.Sprintf("/api/v1/tasks?state=ACCEPTED&limit=1&after=%d", *p.Next), "")
	p.Next = nil
	a.decode(t, &p)
	if len(p.Tasks) != 1 || p.Tasks[0].TaskNo != "ORD-1_KITCHEN_v2" || p.Next != nil {
		t.Fatalf("second page %s", a.body)
	}

	c.auth = ""
	a = c.do("GET", "/healthz", "")
	if a.decode(t, &m); m["outbox"] != 5.0 {
		t.Errorf("healthz %s, want the spool's 5 outbox events", a.body)
	}
}

// TestRealSpoolTooLarge ensures the spool's own task limit surfaces as 413
// payload_too_large even when the request itself is within the HTTP limit.
func TestRealSpoolTooLarge(t *testing.T) {
	b, c := openSpoolAPI(t, spool.Options{MaxTaskBytes: 64})
	wantStatus(t, c.do("POST", "/api/v1/tasks", payloadTask("FITS_v1", "kitchen", make([]byte, 64))), http.StatusAccepted, "")
	a := c.do("POST", "/api/v1/tasks", payloadTask("BIG_v1", "kitchen", make([]byte, 65)))
	wantStatus(t, a, http.StatusRequestEntityTooLarge, "payload_too_large")
	a = c.do("POST", "/api/v1/tasks", `{"task_no":"BIGDOC_v1","printer":"kitchen","document":{"lines":[{"text":"a long line of text that is over sixty-four bytes"}]}}`)
	wantStatus(t, a, http.StatusRequestEntityTooLarge, "payload_too_large")
	if _, err := b.s.Get("BIG_v1"); !errors.Is(err, spool.ErrNotFound) {
		t.Errorf("the refused task is in the spool: %v", err)
	}
}

// TestRealSpoolFull fills a size-capped spool through the API until it
// answers 507 storage_full, then checks that nothing already accepted is
// affected: duplicates still answer 200, tasks read back and can be
// canceled, which is a write the reserve is kept for.
func TestRealSpoolFull(t *testing.T) {
	b, c := openSpoolAPI(t, spool.Options{MaxSize: 2 << 20, Reserve: 512 << 10, MaxTaskBytes: 64 << 10})
	body := make([]byte, 8<<10)
	var accepted []string
	for i := 0; ; i++ {
		if i == 10000 {
			t.Fatal("the spool never filled up")
		}
		no := fmt.Sprintf("FILL-%05d_v1", i)
		body[0], body[1] = byte(i), byte(i>>8)
		a := c.do("POST", "/api/v1/tasks", payloadTask(no, "kitchen", body))
		if a.status == http.StatusAccepted {
			accepted = append(accepted, no)
			continue
		}
		wantStatus(t, a, http.StatusInsufficientStorage, "storage_full")
		break
	}
	if len(accepted) < 50 {
		t.Fatalf("only %d tasks fit before 507", len(accepted))
	}
	wantStatus(t, c.do("POST", "/api/v1/tasks", payloadTask(accepted[0], "kitchen", body)), http.StatusOK, "")
	wantStatus(t, c.do("GET", "/api/v1/tasks/"+accepted[len(accepted)-1], ""), http.StatusOK, "")
	wantStatus(t, c.do("POST", "/api/v1/tasks/"+accepted[1]+"/cancel", ""), http.StatusOK, "")
	if err := b.s.Check(); err != nil {
		t.Fatal(err)
	}
}
