// Package backoff computes the delay before a retry: the lanes' retries,
// requeues and failback checks, and the cloud link's reconnects (full
// jitter, so a thousand stores coming back at once do not stampede).
//
// It is a leaf: it imports nothing of printgate, so any layer may use it
// without importing the agent.
package backoff

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Backoff computes the delay before a retry, for the push wheel's retries,
// requeues and failback checks and the link's reconnects. Either it grows exponentially from Base by
// Factor up to Cap, or, when Schedule is set, it follows that list and then
// repeats its last step. Jitter then spreads the delay so that a store's
// printers, all failing at the same moment, do not retry in lockstep.
//
// The zero value is not useful; see Validate.
type Backoff struct {
	// Base is the first delay (attempt 0).
	Base time.Duration
	// Factor multiplies the delay on each attempt; values below 1 are
	// rejected by Validate because a shrinking backoff hammers a sick
	// printer.
	Factor float64
	// Cap bounds every delay, after jitter. Zero means no cap.
	Cap time.Duration
	// Schedule, when non-empty, replaces Base and Factor: attempt n waits
	// Schedule[n], and attempts past the end wait the last step.
	Schedule []time.Duration
	// Jitter spreads each delay uniformly over ±Jitter of it (0.2 means
	// ±20%). Must be within [0, 1].
	Jitter float64
	// FullJitter, when set, replaces Jitter with a delay drawn uniformly
	// from [0, delay] ("full jitter"), the best spread when many clients
	// retry against one resource.
	FullJitter bool
	// Rand is the random source for jitter. Tests seed it to get exact
	// delays; nil uses the package-level source. A *rand.Rand is not safe
	// for concurrent use, so a shared Backoff with Rand set needs a lock.
	Rand *rand.Rand
}

// ErrInvalidBackoff is wrapped by Validate's errors so callers loading a
// policy from configuration can tell a bad policy from other failures.
var ErrInvalidBackoff = errors.New("invalid backoff policy")

// Validate reports whether the policy can produce sensible delays.
func (b Backoff) Validate() error {
	switch {
	case len(b.Schedule) == 0 && b.Base <= 0:
		return fmt.Errorf("%w: base %v must be positive", ErrInvalidBackoff, b.Base)
	case len(b.Schedule) == 0 && b.Factor < 1:
		return fmt.Errorf("%w: factor %v must be at least 1", ErrInvalidBackoff, b.Factor)
	case b.Cap < 0:
		return fmt.Errorf("%w: cap %v must not be negative", ErrInvalidBackoff, b.Cap)
	case b.Jitter < 0 || b.Jitter > 1 || math.IsNaN(b.Jitter):
		return fmt.Errorf("%w: jitter %v must be within [0, 1]", ErrInvalidBackoff, b.Jitter)
	}
	for i, d := range b.Schedule {
		if d <= 0 {
			return fmt.Errorf("%w: schedule step %d is %v, must be positive", ErrInvalidBackoff, i, d)
		}
	}
	return nil
}

// Delay returns the wait before retry number attempt, counting from 0. A
// negative attempt counts as 0. The result is never negative and never above
// Cap when Cap is set.
func (b Backoff) Delay(attempt int) time.Duration {
	attempt = max(attempt, 0)
	var d float64
	if len(b.Schedule) > 0 {
		d = float64(b.Schedule[min(attempt, len(b.Schedule)-1)])
	} else {
		// Pow overflows to +Inf rather than wrapping, and the cap below
		// brings it back, so a thousandth attempt is as safe as the first.
		d = float64(b.Base) * math.Pow(b.Factor, float64(attempt))
	}
	if b.Cap > 0 {
		d = min(d, float64(b.Cap))
	}
	d = min(d, math.MaxInt64) // an uncapped +Inf times a zero draw would be NaN
	switch {
	case b.FullJitter:
		d *= b.float()
	case b.Jitter > 0:
		d *= 1 + b.Jitter*(2*b.float()-1)
	}
	if b.Cap > 0 {
		d = min(d, float64(b.Cap))
	}
	if d >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(max(d, 0))
}

func (b Backoff) float() float64 {
	if b.Rand != nil {
		return b.Rand.Float64()
	}
	return rand.Float64()
}
