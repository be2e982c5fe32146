package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"printgate/agent/localapi"
	"printgate/drivers/printertest"
	"printgate/internal/apispec"
	"printgate/spool"
	"printgate/sync/cloudtest"
	"printgate/sync/pair"
	"printgate/sync/wire"
)

// movedToBackup sets up a task whose printer left the config, up to the
// resend of its task_no: R1_v1 is taken for
// bar (by submit), then a reload removes bar and its backup kitchen takes
// the task. Both printers are out of paper, so the task stays QUEUED.
func movedToBackup(t *testing.T, defaults string, submit func(h *harness)) *harness {
	t.Helper()
	paperOut := []printertest.FaultKind{printertest.FaultPaperOut}
	h := newHarness(t, []printerSpec{
		{name: "bar", model: printertest.ModelEpson, extra: `backup = "kitchen"`, faults: paperOut},
		{name: "kitchen", model: printertest.ModelEpson, faults: paperOut},
	}, `failover_after = "1h"`+"\n"+defaults)
	h.waitPrinter("bar", "PAPER_OUT")
	h.waitPrinter("kitchen", "PAPER_OUT")
	submit(h)
	h.waitUntil("R1_v1 queued on bar", func() bool { return h.inState(spool.StateQueued, "R1_v1") })
	h.writeConfig(`failover_after = "1h"`+"\n"+defaults, printerBlock("kitchen", h.p["kitchen"], ""))
	if res := h.reload(); len(res.Removed) != 1 || res.Removed[0] != "bar" {
		t.Fatalf("reload result %+v", res)
	}
	h.waitUntil("R1_v1 queued on kitchen", func() bool {
		tk, err := h.sp.Get("R1_v1")
		return err == nil && tk.State == spool.StateQueued && tk.Lane() == "kitchen"
	})
	return h
}

// TestResendAfterReloadIsDuplicateHTTP ensures a task_no already known is
// answered as the duplicate it is through the LAN API, even though its
// printer left the config since (docs/DESIGN.md, invariant 7): 200
// duplicate, QUEUED, on kitchen; not 404 unknown_printer.
func TestResendAfterReloadIsDuplicateHTTP(t *testing.T) {
	const token = "test-token-0123456789abcdef"
	var api http.Handler
	post := func(body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/tasks", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		return rec
	}
	r1 := `{"task_no":"R1_v1","printer":"bar","payload":"` + base64.StdEncoding.EncodeToString([]byte("R1\n")) + `"}`
	h := movedToBackup(t, "", func(h *harness) {
		spec, err := apispec.Load()
		if err != nil {
			t.Fatal(err)
		}
		api = spec.Handler(localapi.New(h.a, localapi.Options{Token: token}), func(err error) { t.Error(err) })
		if rec := post(r1); rec.Code != http.StatusAccepted {
			t.Fatalf("first submit: %d %s", rec.Code, rec.Body)
		}
	})
	for _, body := range []string{
		r1,
		// Whatever else is wrong with the resend now, it is the duplicate.
		`{"task_no":"R1_v1","printer":"bar","payload":"not base64!!","timeout":"1ms"}`,
		`{"task_no":"R1_v1","printer":"bar","document":{"lines":[{"text":"R1"}]},"copies":2}`,
	} {
		rec := post(body)
		var ans struct {
			TaskNo    string      `json:"task_no"`
			State     spool.State `json:"state"`
			Duplicate bool        `json:"duplicate"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &ans); err != nil || rec.Code != http.StatusOK || !ans.Duplicate || ans.State != spool.StateQueued || ans.TaskNo != "R1_v1" {
			t.Errorf("resend %s: %d %s, want 200 duplicate QUEUED", body, rec.Code, rec.Body)
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/api/v1/tasks/R1_v1", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	var got struct {
		Target string      `json:"target"`
		State  spool.State `json:"state"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got.Target != "kitchen" || got.State != spool.StateQueued {
		t.Errorf("task after the resend: %s, want QUEUED on kitchen", rec.Body)
	}
	// A new task_no for the removed printer is still refused.
	if rec := post(`{"task_no":"R2_v1","printer":"bar","payload":"eA=="}`); rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "unknown_printer") {
		t.Errorf("new task for bar: %d %s, want 404 unknown_printer", rec.Code, rec.Body)
	}
	if n := len(h.p["kitchen"].Tickets()) + len(h.p["bar"].Tickets()); n != 0 {
		t.Errorf("%d tickets printed while out of paper", n)
	}
}

// TestResendAfterReloadIsDuplicateCloud is the same resend from the
// reference cloud: job_ack duplicate with state QUEUED, not rejected.
func TestResendAfterReloadIsDuplicateCloud(t *testing.T) {
	cloud := cloudtest.New(cloudtest.Options{})
	srv := httptest.NewServer(cloud.Handler())
	defer srv.Close()
	defer cloud.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	var agentID string
	job := wire.Job{TaskNo: "R1_v1", Printer: "bar", Payload: []byte("R1\n")}
	h := movedToBackup(t, cloudDefaults(srv), func(h *harness) {
		var err error
		if agentID, err = LoadOrCreateAgentID(h.cfg.DataDir); err != nil {
			t.Fatal(err)
		}
		if err := pair.Save(h.cfg.DataDir, cloud.IssueToken(agentID)); err != nil {
			t.Fatal(err)
		}
		lk := testLink(t, h)
		h.a.AttachLink(lk)
		linkCtx, stopLink := context.WithCancel(context.Background())
		linkDone := make(chan struct{})
		go func() { defer close(linkDone); lk.Run(linkCtx) }()
		t.Cleanup(func() { stopLink(); <-linkDone })
		if err := cloud.WaitConnected(ctx, agentID, true); err != nil {
			t.Fatal(err)
		}
		if err := cloud.Queue(agentID, job); err != nil {
			t.Fatal(err)
		}
		if acks, err := cloud.WaitAcks(ctx, agentID, 1); err != nil || acks[0].Result != wire.ResultAccepted {
			t.Fatalf("first ack %+v %v", acks, err)
		}
	})
	if err := cloud.Queue(agentID, job); err != nil {
		t.Fatal(err)
	}
	// The resend with a timeout the link refuses is the duplicate too.
	bad := job
	bad.Timeout = "48h"
	if err := cloud.Queue(agentID, bad); err != nil {
		t.Fatal(err)
	}
	acks, err := cloud.WaitAcks(ctx, agentID, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, ack := range acks[1:] {
		if ack.TaskNo != "R1_v1" || ack.Result != wire.ResultDuplicate || ack.State != spool.StateQueued || ack.Error != nil {
			t.Errorf("resend %d: ack %+v (error %+v), want duplicate QUEUED", i+1, ack, ack.Error)
		}
	}
	tk, err := h.sp.Get("R1_v1")
	if err != nil || tk.Lane() != "kitchen" {
		t.Fatalf("R1_v1: %v %+v, want on kitchen", err, tk)
	}
	if n := len(h.p["kitchen"].Tickets()) + len(h.p["bar"].Tickets()); n != 0 {
		t.Errorf("%d tickets printed while out of paper", n)
	}
}
