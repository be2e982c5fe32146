package wheel

import (
	"time"

	"printgate/internal/backoff"
	"printgate/internal/clock"
)

// The names below moved to printgate/internal/clock and
// printgate/internal/backoff, so that the cloud link can take a clock and a
// backoff without importing the agent. They stay here only until every
// importer uses the new paths (the next commit).

// Clock is [clock.Clock].
//
// Deprecated: use printgate/internal/clock.
type Clock = clock.Clock

// Timer is [clock.Timer].
//
// Deprecated: use printgate/internal/clock.
type Timer = clock.Timer

// FakeClock is [clock.FakeClock].
//
// Deprecated: use printgate/internal/clock.
type FakeClock = clock.FakeClock

// RealClock is [clock.RealClock].
//
// Deprecated: use printgate/internal/clock.
func RealClock() Clock { return clock.RealClock() }

// NewFakeClock is [clock.NewFakeClock].
//
// Deprecated: use printgate/internal/clock.
func NewFakeClock(start time.Time) *FakeClock { return clock.NewFakeClock(start) }

// Backoff is [backoff.Backoff].
//
// Deprecated: use printgate/internal/backoff.
type Backoff = backoff.Backoff
