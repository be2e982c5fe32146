package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"printgate/sync/wire"
)

// open opens a Store in dir and closes it when the test ends.
func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{Dir: dir, Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// seed adds tenant "acme" with store "s1".
func seed(t *testing.T, s *Store) StoreInfo {
	t.Helper()
	ctx := context.Background()
	if _, err := s.AddTenant(ctx, "acme", "Acme"); err != nil {
		t.Fatal(err)
	}
	st, err := s.AddStore(ctx, "acme", "s1", "")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func job(no string) wire.Job {
	return wire.Job{TaskNo: no, Printer: "kitchen", Document: []byte(`{"lines":[{"text":"` + no + `"}]}`)}
}

// TestSubmitDedupe ensures a task_no is stored once per store, answered
// ErrDuplicate with its state on every later submit (also after the job
// was acknowledged and its pending mark cleared), and that the same
// task_no in another store is another job.
func TestSubmitDedupe(t *testing.T) {
	s := open(t, t.TempDir())
	ctx := context.Background()
	st := seed(t, s)
	other, err := s.AddStore(ctx, "acme", "s2", "")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0).UTC()
	// ':' and '.' are task_no characters a key may not hold as such.
	no := "ORD:1.2_KITCHEN_v1"
	if _, err := s.Submit(ctx, st, job(no), "aa", now); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		tk, err := s.Submit(ctx, st, job(no), "aa", now)
		if !errors.Is(err, ErrDuplicate) || tk.State != StateStored || tk.TaskNo != no {
			t.Fatalf("resend %d: %v, %+v; want ErrDuplicate with the STORED task", i, err, tk)
		}
	}
	if p, err := s.Pending(ctx, "s1"); err != nil || len(p) != 1 || p[0] != no {
		t.Fatalf("pending %v, %v; want [%s]", p, err, no)
	}
	if _, err := s.Submit(ctx, other, job(no), "aa", now); err != nil {
		t.Fatalf("the same task_no in another store: %v", err)
	}
	if err := s.ApplyAck(ctx, "s1", wire.JobAck{TaskNo: no, Result: wire.ResultAccepted, State: "ACCEPTED"}, now); err != nil {
		t.Fatal(err)
	}
	if p, err := s.Pending(ctx, "s1"); err != nil || len(p) != 0 {
		t.Fatalf("pending after the ack %v, %v; want none", p, err)
	}
	tk, err := s.Submit(ctx, st, job(no), "aa", now)
	if !errors.Is(err, ErrDuplicate) || tk.State != "ACCEPTED" || tk.Job == nil || tk.Job.Document != nil {
		t.Fatalf("after the ack: %v, %+v; want ErrDuplicate, ACCEPTED, the body dropped", err, tk)
	}
	if p, _ := s.Pending(ctx, "s1"); len(p) != 0 {
		t.Fatalf("a duplicate of an acknowledged job marked it pending again: %v", p)
	}
	if p, _ := s.Pending(ctx, "s2"); len(p) != 1 {
		t.Fatalf("s2 pending %v, want its own job", p)
	}
}

// TestRestartKeepsEverything ensures what was acknowledged as written is
// there after the engine is stopped and started again on the same dir:
// jobs, their order of pending, states, timelines, the directory, owners.
func TestRestartKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0).UTC()
	s := open(t, dir)
	st := seed(t, s)
	_, secret, err := s.AddAPIKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := s.Submit(ctx, st, job(fmt.Sprintf("T%d", 5-i)), "", now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ApplyEvents(ctx, st, "T5", []wire.Event{{TaskNo: "T5", N: 1, State: "ACCEPTED", At: now}, {TaskNo: "T5", N: 2, State: "PRINTED", Confirmation: "printed", At: now}}, now); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Claim(ctx, "s1", "c1", "agent-1", now); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s = open(t, dir)
	if k, err := s.APIKey(ctx, secret); err != nil || k.Tenant != "acme" {
		t.Fatalf("API key after restart: %+v, %v", k, err)
	}
	p, err := s.Pending(ctx, "s1")
	if want := []string{"T5", "T4", "T3", "T2", "T1"}; err != nil || fmt.Sprint(p) != fmt.Sprint(want) {
		t.Fatalf("pending after restart %v, %v; want %v (submit order)", p, err, want)
	}
	tk, err := s.Task(ctx, "s1", "T5")
	if err != nil || tk.State != "PRINTED" || len(tk.Timeline) != 3 {
		t.Fatalf("T5 after restart: %+v, %v; want PRINTED with STORED, ACCEPTED, PRINTED", tk, err)
	}
	if o, err := s.OwnerOf(ctx, "s1"); err != nil || o.Conn != "c1" {
		t.Fatalf("owner after restart %+v, %v", o, err)
	}
	// The restarted node holds no connection: its old records go, another
	// node's stay.
	if _, _, err := s.Claim(ctx, "s2", "c9", "agent-9", now); err != nil {
		t.Fatal(err)
	}
	s.Close()
	other, err := Open(ctx, Options{Dir: dir, Node: "n2"})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := other.ReleaseStale(ctx); err != nil || n != 0 {
		t.Fatalf("node n2 released %d of n1's records, %v; want none", n, err)
	}
	other.Close()
	s = open(t, dir)
	if n, err := s.ReleaseStale(ctx); err != nil || n != 2 {
		t.Fatalf("ReleaseStale: %d, %v; want n1's 2 records", n, err)
	}
	if _, err := s.OwnerOf(ctx, "s1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("owner of s1 after ReleaseStale: %v; want none", err)
	}
}

// TestEngineSyncsEveryWrite ensures the engine runs with sync_always and
// listens on no port: an acknowledged write is on disk, and only the
// hub's process reaches the engine.
func TestEngineSyncsEveryWrite(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	if jc := s.ns.JetStreamConfig(); jc == nil || !jc.SyncAlways || jc.StoreDir != filepath.Join(dir, "jetstream") {
		t.Fatalf("JetStream config %+v; want sync_always, files in %s", jc, filepath.Join(dir, "jetstream"))
	}
	if addr := s.ns.Addr(); addr != nil {
		t.Fatalf("the engine listens on %v; want no client port by default", addr)
	}
}

// TestOpenLocksDir ensures a second Open of a data dir in use is refused.
func TestOpenLocksDir(t *testing.T) {
	dir := t.TempDir()
	open(t, dir)
	if s, err := Open(context.Background(), Options{Dir: dir}); !errors.Is(err, ErrLocked) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("second Open: %v; want ErrLocked", err)
	}
}

// TestEventsDedupe ensures each (store, task_no, n) is applied once, gaps
// are kept as gaps, the state is the highest n's, and an event of another
// store's task_no creates a record in its own store only.
func TestEventsDedupe(t *testing.T) {
	s := open(t, t.TempDir())
	ctx := context.Background()
	st := seed(t, s)
	now := time.Unix(1_800_000_000, 0).UTC()
	evs := []wire.Event{
		{TaskNo: "LAN-1", N: 1, State: "ACCEPTED", Origin: "local", At: now,
			Job: &wire.JobInfo{Printer: "bar", Origin: "local", SHA256: "ab"}},
		{TaskNo: "LAN-1", N: 4, State: "PRINTED", Confirmation: "printed", Printer: "bar", At: now},
	}
	if n, err := s.ApplyEvents(ctx, st, "LAN-1", evs, now); err != nil || len(n) != 2 {
		t.Fatalf("first batch: %d new, %v", len(n), err)
	}
	// The batch resent (a lost events_ack), with a late n=2 and n=3.
	evs = append(evs, wire.Event{TaskNo: "LAN-1", N: 3, State: "SENDING", At: now}, wire.Event{TaskNo: "LAN-1", N: 2, State: "QUEUED", At: now})
	if n, err := s.ApplyEvents(ctx, st, "LAN-1", evs, now); err != nil || len(n) != 2 || n[0].N != 3 || n[1].N != 2 {
		t.Fatalf("resend: new %+v, %v; want only n=3 and n=2, in the batch's order", n, err)
	}
	tk, err := s.Task(ctx, "s1", "LAN-1")
	if err != nil {
		t.Fatal(err)
	}
	var ns []int
	for _, e := range tk.Timeline {
		ns = append(ns, e.N)
	}
	if tk.State != "PRINTED" || fmt.Sprint(ns) != "[1 2 3 4]" || tk.Origin != "local" || tk.Printer != "bar" {
		t.Fatalf("LAN-1: state %s, timeline n %v, origin %s, printer %s; want PRINTED, [1 2 3 4], local, bar", tk.State, ns, tk.Origin, tk.Printer)
	}
	if _, err := s.Task(ctx, "s2", "LAN-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another store sees LAN-1: %v", err)
	}
}

// TestOwnerCompareAndSet ensures a newer claim replaces an older one and
// an older connection's release leaves the newer claim in place.
func TestOwnerCompareAndSet(t *testing.T) {
	s := open(t, t.TempDir())
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0).UTC()
	_, rev1, err := s.Claim(ctx, "s1", "c1", "a", now)
	if err != nil {
		t.Fatal(err)
	}
	prev, rev2, err := s.Claim(ctx, "s1", "c2", "a", now)
	if err != nil || prev.Conn != "c1" {
		t.Fatalf("second claim: prev %+v, %v; want c1", prev, err)
	}
	if ok, err := s.Release(ctx, "s1", rev1); err != nil || ok {
		t.Fatalf("stale release: removed %v, %v; want kept", ok, err)
	}
	if o, err := s.OwnerOf(ctx, "s1"); err != nil || o.Conn != "c2" {
		t.Fatalf("owner %+v, %v; want c2", o, err)
	}
	if ok, err := s.Release(ctx, "s1", rev2); err != nil || !ok {
		t.Fatalf("own release: removed %v, %v", ok, err)
	}
	if _, err := s.OwnerOf(ctx, "s1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("owner after release: %v; want none", err)
	}
	if _, _, err := s.Claim(ctx, "s1", "c3", "a", now); err != nil {
		t.Fatalf("claim after release: %v", err)
	}
}

// TestExpireDue ensures a job no agent acknowledged by its deadline (its
// timeout, or ExpireAfter) becomes EXPIRED with the reason the store
// showed (never sent: AGENT_OFFLINE; sent: NO_ACK), is not pending or sent
// again, is still answered as a duplicate, and that the agent's late
// job_ack replaces EXPIRED with its own state.
func TestExpireDue(t *testing.T) {
	s := open(t, t.TempDir())
	ctx := context.Background()
	st := seed(t, s)
	t0 := time.Unix(1_800_000_000, 0).UTC()
	quick := job("QUICK")
	quick.Timeout = "90s"
	for _, j := range []wire.Job{quick, job("SENT"), job("DAY")} {
		if j.TaskNo == "SENT" {
			j.Timeout = "90s"
		}
		if _, err := s.Submit(ctx, st, j, "", t0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.MarkSent(ctx, "s1", "SENT"); err != nil {
		t.Fatal(err)
	}
	if done, err := s.ExpireDue(ctx, t0.Add(89*time.Second)); err != nil || len(done) != 0 {
		t.Fatalf("before the deadline: %v, %v; want nothing expired", done, err)
	}
	done, err := s.ExpireDue(ctx, t0.Add(90*time.Second))
	if err != nil || len(done) != 2 {
		t.Fatalf("at the deadline: %+v, %v; want QUICK and SENT", done, err)
	}
	for no, reason := range map[string]string{"QUICK": ReasonAgentOffline, "SENT": ReasonNoAck} {
		tk, err := s.Task(ctx, "s1", no)
		if err != nil || tk.State != StateExpired || tk.Reason != reason || tk.Job.Document != nil {
			t.Errorf("%s: %+v, %v; want EXPIRED %s, the body dropped", no, tk, err, reason)
		}
		if _, err := s.PendingJob(ctx, "s1", no); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s is still to be sent: %v", no, err)
		}
	}
	if p, _ := s.Pending(ctx, "s1"); fmt.Sprint(p) != "[DAY]" {
		t.Fatalf("pending %v; want DAY alone (24 h without a timeout)", p)
	}
	if tk, err := s.Submit(ctx, st, quick, "", t0); !errors.Is(err, ErrDuplicate) || tk.State != StateExpired {
		t.Fatalf("resubmit of an expired job: %v, %s; want a duplicate, EXPIRED", err, tk.State)
	}
	if err := s.ApplyAck(ctx, "s1", wire.JobAck{TaskNo: "SENT", Result: wire.ResultAccepted, State: "ACCEPTED"}, t0.Add(91*time.Second)); err != nil {
		t.Fatal(err)
	}
	if tk, _ := s.Task(ctx, "s1", "SENT"); tk.State != "ACCEPTED" || tk.Reason != "" {
		t.Fatalf("late ack: %s %s; want the agent's ACCEPTED", tk.State, tk.Reason)
	}
	if done, err := s.ExpireDue(ctx, t0.Add(24*time.Hour)); err != nil || len(done) != 1 || done[0].TaskNo != "DAY" {
		t.Fatalf("a day later: %+v, %v; want DAY", done, err)
	}
}
