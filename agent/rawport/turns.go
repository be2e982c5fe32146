package rawport

import (
	"context"
	"sync"
)

// turns is the port's line: jobs are stored in the order their connections
// arrived, as a printer that serves one connection at a time prints them,
// although the port reads every connection at once (so that none waits in
// a way its client could see, and none is reset). Each accepted connection
// takes a number; its job is handed to the Sink only when every lower
// number has been given back: its job stored or dropped, or its connection
// gone or silent with no job. A later job on a connection kept open takes
// a new number when its first bytes arrive.
type turns struct {
	mu    sync.Mutex
	next  uint64              // the number take hands out next
	head  uint64              // the lowest number not given back
	given map[uint64]struct{} // numbers above head already given back
	moved chan struct{}       // closed, and replaced, when head moves
}

func newTurns() *turns {
	return &turns{given: map[uint64]struct{}{}, moved: make(chan struct{})}
}

// take returns the next place in line.
func (t *turns) take() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.next
	t.next++
	return n
}

// give hands back n: its job is stored or will not be.
func (t *turns) give(n uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n != t.head {
		t.given[n] = struct{}{}
		return
	}
	t.head++
	for {
		if _, ok := t.given[t.head]; !ok {
			break
		}
		delete(t.given, t.head)
		t.head++
	}
	close(t.moved)
	t.moved = make(chan struct{})
}

// first reports whether n is first in line, and returns a channel closed
// when the line next moves.
func (t *turns) first(n uint64) (bool, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.head == n, t.moved
}

// wait blocks until n is first in line, or ctx ends.
func (t *turns) wait(ctx context.Context, n uint64) error {
	for {
		t.mu.Lock()
		head, moved := t.head, t.moved
		t.mu.Unlock()
		if head == n {
			return nil
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
