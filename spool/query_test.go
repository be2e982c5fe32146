package spool

import (
	"reflect"
	"testing"
)

// TestQueueOrder ensures a lane lists urgent tasks first, then by seq, and
// only non-terminal tasks.
func TestQueueOrder(t *testing.T) {
	s, _ := openTest(t, Options{})
	for i, p := range []Priority{PriorityNormal, PriorityUrgent, PriorityNormal, PriorityUrgent, PriorityNormal} {
		nt := task(seqName(i), "kitchen")
		nt.Priority = p
		mustAccept(t, s, nt)
	}
	mustAccept(t, s, task("OTHER_v1", "kitchen2"))
	mustMove(t, s, seqName(2), StateCanceled, Change{})
	q, err := s.Queue("kitchen")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{seqName(1), seqName(3), seqName(0), seqName(4)}
	if got := taskNos(q); !reflect.DeepEqual(got, want) {
		t.Errorf("queue %v, want %v", got, want)
	}
	lanes, _ := s.Lanes()
	if !reflect.DeepEqual(lanes, []string{"kitchen", "kitchen2"}) {
		t.Errorf("lanes %v", lanes)
	}
}

// TestListFiltersAndPages ensures List pages through every matching task
// exactly once, in both directions.
func TestListFiltersAndPages(t *testing.T) {
	s, _ := openTest(t, Options{})
	var kitchen []string
	for i := 0; i < 23; i++ {
		p := "bar"
		if i%3 != 0 {
			p = "kitchen"
			kitchen = append(kitchen, seqName(i))
		}
		mustAccept(t, s, task(seqName(i), p))
	}
	mustMove(t, s, seqName(1), StateCanceled, Change{})
	var got []string
	for after := uint64(0); ; {
		p, err := s.List(ListOptions{Printer: "kitchen", After: after, Limit: 4})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, taskNos(p.Tasks)...)
		if p.Next == 0 {
			break
		}
		after = p.Next
	}
	if !reflect.DeepEqual(got, kitchen) {
		t.Errorf("ascending pages %v\nwant %v", got, kitchen)
	}
	got = nil
	for after := uint64(0); ; {
		p, _ := s.List(ListOptions{Printer: "kitchen", After: after, Limit: 5, Desc: true})
		got = append(got, taskNos(p.Tasks)...)
		if p.Next == 0 {
			break
		}
		after = p.Next
	}
	for i, j := 0, len(kitchen)-1; i < j; i, j = i+1, j-1 {
		kitchen[i], kitchen[j] = kitchen[j], kitchen[i]
	}
	if !reflect.DeepEqual(got, kitchen) {
		t.Errorf("descending pages %v\nwant %v", got, kitchen)
	}
	p, _ := s.List(ListOptions{State: StateCanceled})
	if got := taskNos(p.Tasks); !reflect.DeepEqual(got, []string{seqName(1)}) {
		t.Errorf("state filter %v", got)
	}
}
