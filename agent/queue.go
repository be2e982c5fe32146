package agent

import (
	"container/heap"
	"slices"
	"time"

	"printgate/spool"
)

// entry is a task the lane holds. It keeps a light copy of the stored task
// (no body, no timeline: see lite) so a backlog of 100,000 tasks costs
// megabytes, not the hundreds a full copy each would; the job is rendered
// from the copy the SENDING transaction returns.
type entry struct {
	task *spool.Task
	// timedOut is set when the deadline passed while the job was in flight:
	// the job's outcome decides between PRINTED and TIMED_OUT.
	timedOut bool
	// writeFails counts spool writes for this task that failed in a row,
	// to back off the next try.
	writeFails int
	// unknowns counts the task's outcome-unknown copies since its lane
	// last confirmed a copy (confirmsAt is the lane's count of confirmed
	// copies when it was counted), toward max_unknown; reprintDue is set
	// once the backoff before the next copy has passed.
	unknowns   int
	confirmsAt uint64
	reprintDue bool
	// heap and idx place the entry in a seqHeap, for O(log n) removal.
	heap *seqHeap
	idx  int
}

// lite copies t without what the lane never reads from its copy: the body,
// the timeline and the free-text fields.
func lite(t *spool.Task) *spool.Task {
	c := *t
	c.Payload, c.Document, c.Timeline = nil, nil, nil
	c.SHA256, c.Message = "", ""
	return &c
}

// seqHeap is a min-heap of entries by accept sequence. Each entry knows its
// index, so any one can be removed in O(log n) (a deadline, a cancel).
type seqHeap []*entry

func (h seqHeap) Len() int           { return len(h) }
func (h seqHeap) Less(i, j int) bool { return h[i].task.Seq < h[j].task.Seq }
func (h seqHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}

func (h *seqHeap) Push(x any) {
	e := x.(*entry)
	e.heap, e.idx = h, len(*h)
	*h = append(*h, e)
}

func (h *seqHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.heap, e.idx = nil, -1
	return e
}

func (h *seqHeap) push(e *entry) { heap.Push(h, e) }

func (h *seqHeap) peek() *entry {
	if len(*h) == 0 {
		return nil
	}
	return (*h)[0]
}

func (h *seqHeap) pop() *entry { return heap.Pop(h).(*entry) }

// remove takes e out if it is in h.
func (h *seqHeap) remove(e *entry) bool {
	if e.heap != h {
		return false
	}
	heap.Remove(h, e.idx)
	return true
}

// drain empties h and returns its entries in seq order.
func (h *seqHeap) drain() []*entry {
	out := []*entry(*h)
	*h = nil
	for _, e := range out {
		e.heap, e.idx = nil, -1
	}
	sortBySeq(out)
	return out
}

// taskQueue is a lane's printable work, picked by (effective priority, seq):
// urgent tasks, and normal ones waiting longer than the ageing limit, go
// first, each group by accept sequence. Urgent and normal tasks sit in two
// heaps; since seq grows with accept time, the oldest normal task is the
// normal heap's top, and if it has not aged no normal task has. Push, pop
// and remove are O(log n).
type taskQueue struct {
	urgent, normal seqHeap
}

func (q *taskQueue) len() int { return len(q.urgent) + len(q.normal) }

func (q *taskQueue) push(e *entry) {
	if e.task.Priority == spool.PriorityUrgent {
		q.urgent.push(e)
		return
	}
	q.normal.push(e)
}

// pop removes and returns the task to print next, or nil.
func (q *taskQueue) pop(now time.Time, ageAfter time.Duration) *entry {
	u, n := q.urgent.peek(), q.normal.peek()
	switch {
	case u == nil && n == nil:
		return nil
	case u == nil:
		return q.normal.pop()
	case n == nil:
		return q.urgent.pop()
	case now.Sub(n.task.AcceptedAt) >= ageAfter && n.task.Seq < u.task.Seq:
		return q.normal.pop()
	}
	return q.urgent.pop()
}

func (q *taskQueue) remove(e *entry) bool { return q.urgent.remove(e) || q.normal.remove(e) }

// drain empties the queue and returns its entries in seq order.
func (q *taskQueue) drain() []*entry {
	out := append(q.urgent.drain(), q.normal.drain()...)
	sortBySeq(out)
	return out
}

func sortBySeq(list []*entry) {
	slices.SortFunc(list, func(a, b *entry) int {
		switch {
		case a.task.Seq < b.task.Seq:
			return -1
		case a.task.Seq > b.task.Seq:
			return 1
		}
		return 0
	})
}
