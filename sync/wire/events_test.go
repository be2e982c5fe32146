package wire_test

import (
	"errors"
	"strings"
	"testing"

	"printgate/spool"
	"printgate/sync/wire"
)

func batch(keys ...any) wire.Events {
	e := wire.Events{Batch: "b-1"}
	for i := 0; i < len(keys); i += 2 {
		e.Events = append(e.Events, wire.Event{TaskNo: keys[i].(string), N: keys[i+1].(int), State: spool.StateQueued})
	}
	return e
}

// TestOrderedAccepts ensures batches in task_no-then-n order pass, gaps in
// n included (compaction leaves them), with task_no compared bytewise as
// the outbox keys sort.
func TestOrderedAccepts(t *testing.T) {
	for _, b := range []wire.Events{
		batch(),
		batch("A", 1),
		batch("A", 1, "A", 2, "A", 7, "B", 1),
		batch("A", 9, "B", 1),
		batch("B", 1, "a", 1),     // 'B' < 'a' bytewise
		batch("A-1", 1, "A_1", 1), // '-' < '_'
		batch("A", 1, "AB", 1),
		batch("A", 1, "B", 1048577), // a CORRUPT_RECORD event
	} {
		if err := b.Ordered(); err != nil {
			t.Errorf("%v: %v", b.Events, err)
		}
	}
}

// TestOrderedRefuses ensures a batch out of order, or with a (task_no, n)
// twice, fails with ErrUnordered naming the first event out of place.
func TestOrderedRefuses(t *testing.T) {
	for _, c := range []struct {
		b    wire.Events
		want string
	}{
		{batch("B", 1, "A", 1), `events[1] (task_no "A", n 1) comes after events[0] (task_no "B", n 1)`},
		{batch("A", 1, "A", 3, "A", 2), `events[2] (task_no "A", n 2) comes after events[1] (task_no "A", n 3)`},
		{batch("A", 1, "B", 2, "A", 3), `events[2] (task_no "A", n 3) comes after events[1] (task_no "B", n 2)`},
		{batch("A", 2, "A", 2), `events[1] (task_no "A", n 2) repeats events[0] (task_no "A", n 2)`},
		{batch("a", 1, "B", 1), `events[1] (task_no "B", n 1) comes after events[0] (task_no "a", n 1)`},
	} {
		err := c.b.Ordered()
		if !errors.Is(err, wire.ErrUnordered) {
			t.Errorf("%v: error %v, want ErrUnordered", c.b.Events, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), `batch "b-1": `) {
			t.Errorf("%v: error %q, want it to name the batch and say %q", c.b.Events, err, c.want)
		}
	}
}

// TestGoldenEventsOrdered ensures the golden batch is itself in order, so
// the frame that pins the format also shows the order §5 asks for.
func TestGoldenEventsOrdered(t *testing.T) {
	m, err := wire.Decode([]byte(goldenOf(t, wire.TypeEvents)))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.(*wire.Events).Ordered(); err != nil {
		t.Fatal(err)
	}
}
