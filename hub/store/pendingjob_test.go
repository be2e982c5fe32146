package store

import (
	"context"
	"testing"
	"time"

	"printgate/sync/wire"
)

// TestPendingJobAfterEventsBeforeAck: a job whose agent's events reached
// the hub before its job_ack (the ack lost with a cut connection, the
// events replayed first on the next one) is still sent again until its
// job_ack, as PROTOCOL §5 asks; the agent answers the resend duplicate.
// PendingJob required the state STORED, so once the events moved it the
// job was never resent and its ack never came (cloudcheck's
// jobs.lost_ack_duplicate failed under load).
func TestPendingJobAfterEventsBeforeAck(t *testing.T) {
	s := open(t, t.TempDir())
	ctx := context.Background()
	st := seed(t, s)
	now := time.Unix(1_800_000_000, 0).UTC()
	if _, err := s.Submit(ctx, st, job("EARLY"), "", now); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkSent(ctx, "s1", "EARLY"); err != nil {
		t.Fatal(err)
	}
	evs := []wire.Event{{TaskNo: "EARLY", Seq: 1, N: 1, State: "ACCEPTED", At: now}, {TaskNo: "EARLY", Seq: 1, N: 2, State: "PRINTED", Confirmation: "printed", At: now}}
	if _, err := s.ApplyEvents(ctx, st, "EARLY", evs, now); err != nil {
		t.Fatal(err)
	}
	j, err := s.PendingJob(ctx, "s1", "EARLY")
	if err != nil || j.TaskNo != "EARLY" {
		t.Fatalf("PendingJob after the events, before the ack: %+v, %v; want the job, to send again", j, err)
	}
	if err := s.ApplyAck(ctx, "s1", wire.JobAck{TaskNo: "EARLY", Result: wire.ResultDuplicate, State: "PRINTED"}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PendingJob(ctx, "s1", "EARLY"); err == nil {
		t.Fatal("still to be sent after its job_ack")
	}
}
