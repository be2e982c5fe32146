package rawport

import "sync"

// Limiter bounds connections across every port of the agent, so many ports
// together cannot hold more sockets and buffers than one agent should.
type Limiter struct {
	mu   sync.Mutex
	n    int
	used int
}

// NewLimiter returns a Limiter allowing n simultaneous connections; n <= 0
// allows none.
func NewLimiter(n int) *Limiter { return &Limiter{n: n} }

// tryAcquire takes a slot if one is free.
func (l *Limiter) tryAcquire() bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.used >= l.n {
		return false
	}
	l.used++
	return true
}

// release gives back a slot taken by tryAcquire.
func (l *Limiter) release() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.used--
	l.mu.Unlock()
}
