package spool

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// NewTask.Queued lets a caller that must store tasks in order (a raw
// port's jobs) hand over the next task once the one before is queued, not
// committed: a chain of 20 such tasks shares a few commits instead of
// taking one each, and is stored in the chain's order.
func TestQueuedTasksShareCommitsInOrder(t *testing.T) {
	var commits atomic.Int32
	s, _ := openTest(t, Options{FailCommit: func() error {
		commits.Add(1)
		time.Sleep(20 * time.Millisecond) // a slow fsync
		return nil
	}})
	const n = 20
	tasks := make([]*Task, n)
	var wg sync.WaitGroup
	var accept func(i int)
	accept = func(i int) {
		defer wg.Done()
		queued := false
		nt := task(fmt.Sprintf("CHAIN_%02d", i), "kitchen")
		nt.Queued = func() {
			queued = true
			if i+1 < n {
				wg.Add(1)
				go accept(i + 1)
			}
		}
		tk, dup, err := s.Accept(nt)
		if err != nil || dup || !queued {
			t.Errorf("task %d: err %v, duplicate %v, queued called %v", i, err, dup, queued)
			if !queued && i+1 < n {
				wg.Add(1)
				go accept(i + 1)
			}
			return
		}
		tasks[i] = tk
	}
	wg.Add(1)
	go accept(0)
	wg.Wait()
	for i := 1; i < n; i++ {
		if tasks[i] != nil && tasks[i-1] != nil && tasks[i].Seq <= tasks[i-1].Seq {
			t.Fatalf("task %d has seq %d, after task %d's %d", i, tasks[i].Seq, i-1, tasks[i-1].Seq)
		}
	}
	if c := commits.Load(); c > 4 {
		t.Fatalf("%d tasks handed over in turn took %d commits, want a few: each waited for the one before to be fsync'd", n, c)
	}
}
