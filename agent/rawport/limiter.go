package rawport

import "context"

// Limiter bounds connections across every port of the agent, so many ports
// together cannot hold more sockets and buffers than one agent should. A
// port over it stops accepting: the connections wait in the kernel's listen
// backlog, with their bytes, until a slot frees, as at a printer busy with
// another connection; none is reset to enforce the bound.
type Limiter struct {
	slots chan struct{}
}

// NewLimiter returns a Limiter allowing n simultaneous connections; n <= 0
// allows none (a port sharing it accepts nothing).
func NewLimiter(n int) *Limiter { return &Limiter{slots: make(chan struct{}, max(n, 0))} }

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
