package rawport

import (
	"context"
	"sync"
)

// Limiter bounds connections across every port of the agent, so many ports
// together cannot hold more sockets and buffers than one agent should. A
// port over it stops accepting: the connections wait in the kernel's listen
// backlog, with their bytes, until a slot frees, as at a printer busy with
// another connection; none is reset to enforce the bound. It also bounds
// the memory of the jobs being read (MaxMemory, below).
type Limiter struct {
	slots chan struct{}
	mem   memBudget
}

// NewLimiter returns a Limiter allowing n simultaneous connections, and
// MaxMemory of jobs being read past ConnFreeBytes each; n <= 0 allows none
// (a port sharing it accepts nothing).
func NewLimiter(n int) *Limiter {
	return &Limiter{slots: make(chan struct{}, max(n, 0)), mem: memBudget{max: MaxMemory}}
}

// acquire waits for a free slot, or for ctx or stop to end, and reports
// whether it took one.
func (l *Limiter) acquire(ctx context.Context, stop <-chan struct{}) bool {
	if l == nil {
		return true
	}
	select {
	case l.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	}
}

// release gives back a slot taken by acquire.
func (l *Limiter) release() {
	if l == nil {
		return
	}
	<-l.slots
}

// tryAcquire takes a free slot if there is one, without waiting, and
// reports whether it did. A nil Limiter always has one.
func (l *Limiter) tryAcquire() bool {
	if l == nil {
		return true
	}
	select {
	case l.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// The memory of jobs being read is bounded for all the ports sharing a
// Limiter: each connection reads its first ConnFreeBytes of a job freely
// (a ticket is a few KiB), and past that takes room from a budget shared
// by the ports, MaxMemory in all. A connection that finds none waits
// unread, its client's bytes in the kernel's buffers (docs/DESIGN.md, invariant
// 8), until a job elsewhere is stored; the first job in its port's line
// always reads, so the line moves however full the budget is.
const (
	// MaxMemory is the budget of a Limiter made by NewLimiter.
	MaxMemory = 16 << 20
	// ConnFreeBytes is what a connection holds without the budget.
	ConnFreeBytes = 64 << 10
	// memStep is how much a connection takes from the budget at a time.
	memStep = 256 << 10
)

// memBudget is the shared memory budget of a Limiter.
type memBudget struct {
	mu    sync.Mutex
	max   int
	used  int
	freed chan struct{} // closed, and replaced, when room is given back
}

// takeMem takes n bytes of the budget if it has them, and reports whether
// it did. A nil Limiter has no budget: it always has room.
func (l *Limiter) takeMem(n int) bool {
	if l == nil {
		return true
	}
	m := &l.mem
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.used+n > m.max {
		return false
	}
	m.used += n
	return true
}

// giveMem gives back n bytes taken by takeMem.
func (l *Limiter) giveMem(n int) {
	if l == nil || n == 0 {
		return
	}
	m := &l.mem
	m.mu.Lock()
	defer m.mu.Unlock()
	m.used -= n
	if m.freed != nil {
		close(m.freed)
		m.freed = nil
	}
}

// memFreed is closed when room is next given back.
func (l *Limiter) memFreed() <-chan struct{} {
	if l == nil {
		return nil
	}
	m := &l.mem
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.freed == nil {
		m.freed = make(chan struct{})
	}
	return m.freed
}

// MemoryInUse is the budget taken now, in bytes, for tests and metrics.
func (l *Limiter) MemoryInUse() int {
	if l == nil {
		return 0
	}
	l.mem.mu.Lock()
	defer l.mem.mu.Unlock()
	return l.mem.used
}
