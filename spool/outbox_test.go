package spool

import (
	"fmt"
	"testing"
)

// TestOutboxOrderAndAck ensures events come out in task_no order, then event
// number, whatever order they were written in, and that acknowledged events
// are gone while a repeated acknowledgement is harmless.
func TestOutboxOrderAndAck(t *testing.T) {
	s, _ := openTest(t, Options{})
	mustAccept(t, s, task("B_v1", "k"))
	mustAccept(t, s, task("A_v1", "k"))
	mustAccept(t, s, task("A_v10", "k"))
	mustMove(t, s, "B_v1", StateQueued, Change{})
	mustMove(t, s, "A_v1", StateQueued, Change{})
	mustMove(t, s, "A_v1", StateSending, Change{})
	evs, err := s.ReadOutbox(100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, fmt.Sprintf("%s/%d/%s", e.TaskNo, e.N, e.State))
	}
	want := []string{"A_v1/1/ACCEPTED", "A_v1/2/QUEUED", "A_v1/3/SENDING", "A_v10/1/ACCEPTED", "B_v1/1/ACCEPTED", "B_v1/2/QUEUED"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("outbox order %v\nwant %v", got, want)
	}
	first, _ := s.ReadOutbox(2)
	keys := [][]byte{first[0].Key, first[1].Key}
	if err := s.AckOutbox(keys); err != nil {
		t.Fatal(err)
	}
	if err := s.AckOutbox(keys); err != nil {
		t.Fatal(err)
	}
	if d, _ := s.OutboxDepth(); d != 4 {
		t.Errorf("depth %d after acking 2 of 6 twice, want 4", d)
	}
	rest, _ := s.ReadOutbox(100)
	if len(rest) != 4 || rest[0].TaskNo != "A_v1" || rest[0].N != 3 {
		t.Errorf("after ack: %+v", rest)
	}
}
