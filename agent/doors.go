package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"printgate/agent/api"
	"printgate/agent/config"
	"printgate/internal/clock"
	"printgate/internal/warnlimit"
	"printgate/spool"
)

// The intake doors' own limits: the spool charges each
// origin against its quota (spool.Options.Quotas), and here each door gets
// a token bucket of tasks per second, so a flood through one door costs
// bounded disk, log and time and never starves the others. Past a quota a
// door answers as for a full spool; past a rate the LAN API and the cloud
// are asked to come back later and a raw job waits on its connection, as
// a busy printer would make it (docs/DESIGN.md, invariant 8).

// DoorOrigin is the origin of the tasks that come through door (one of
// config.Doors).
func DoorOrigin(door string) spool.Origin {
	switch door {
	case config.DoorAPI:
		return spool.OriginLocal
	case config.DoorCloud:
		return spool.OriginCloud
	case config.DoorRaw:
		return spool.OriginRaw
	case config.DoorReprint:
		return spool.OriginManager
	}
	return spool.Origin(door)
}

// OriginDoor is the door tasks of origin o come through, for messages that
// name its keys.
func OriginDoor(o spool.Origin) string {
	for _, d := range config.Doors {
		if DoorOrigin(d) == o {
			return d
		}
	}
	return string(o)
}

// SpoolQuotas is what each origin may hold in a spool capped at cap bytes:
// the spool's Options.Quotas for the config's [spool] quotas.
func SpoolQuotas(s config.Spool, cap int64) map[spool.Origin]int64 {
	out := map[spool.Origin]int64{}
	for d, q := range s.Quota {
		out[DoorOrigin(d)] = q.Of(cap)
	}
	return out
}

// rateWindow is how long a door stays reported (health, page alert) after
// its last task over the rate.
const rateWindow = time.Minute

// bucket is one door's token bucket: burst tasks at once, rate a second.
type bucket struct {
	rate, burst float64
	tokens      float64
	at          time.Time
}

// take spends a token at now, or says how long until one is free.
func (b *bucket) take(now time.Time) (time.Duration, bool) {
	switch {
	case b.at.IsZero():
		b.tokens = b.burst
	case now.After(b.at):
		b.tokens = min(b.burst, b.tokens+now.Sub(b.at).Seconds()*b.rate)
	}
	if now.After(b.at) {
		b.at = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	wait := time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
	return max(wait, time.Millisecond), false
}

// doors holds the doors' rates and what they last ran into.
type doors struct {
	clock  clock.Clock
	log    *slog.Logger
	quotas map[string]config.Quota

	mu      sync.Mutex
	buckets map[spool.Origin]*bucket
	over    map[spool.Origin]*spool.QuotaError // refused for its quota, until one of its tasks gets in again
	rated   map[spool.Origin]time.Time         // when its last task over the rate came
	// rateShown marks doors whose rate trip the health report shows.
	rateShown map[spool.Origin]bool
	warns     warnlimit.Limiter
}

func newDoors(s config.Spool, clk clock.Clock, log *slog.Logger) *doors {
	d := &doors{
		clock: clk, log: log, quotas: s.Quota,
		buckets:   map[spool.Origin]*bucket{},
		over:      map[spool.Origin]*spool.QuotaError{},
		rated:     map[spool.Origin]time.Time{},
		rateShown: map[spool.Origin]bool{},
		warns:     warnlimit.Limiter{Now: clk.Now},
	}
	for door, r := range s.Rate {
		if r > 0 {
			d.buckets[DoorOrigin(door)] = &bucket{rate: r, burst: max(1, r*config.RateBurstSeconds)}
		}
	}
	return d
}

// take spends one of origin o's tokens, or returns the *api.RateLimited
// refusal and reports the door over its rate.
func (d *doors) take(o spool.Origin) error {
	now := d.clock.Now()
	d.mu.Lock()
	b := d.buckets[o]
	if b == nil {
		d.mu.Unlock()
		return nil
	}
	wait, ok := b.take(now)
	if ok {
		d.mu.Unlock()
		return nil
	}
	d.rated[o] = now
	d.mu.Unlock()
	door := OriginDoor(o)
	return &api.RateLimited{Door: door, Key: config.RateKey(door), Rate: b.rate, Burst: b.burst, RetryAfter: wait}
}

// refund gives back a token origin o spent on a task the spool then did
// not take (its quota, the cap, a failed write): a door refused for its
// quota must not also use up its rate, or it is refused for its rate once
// the quota has room again.
func (d *doors) refund(o spool.Origin) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if b := d.buckets[o]; b != nil {
		b.tokens = min(b.burst, b.tokens+1)
	}
}

// wait takes one of origin o's tokens, waiting for it as long as it takes
// (the raw ports: a job over the rate waits on its connection instead of
// being refused), or until ctx ends.
func (d *doors) wait(ctx context.Context, o spool.Origin) error {
	for {
		err := d.take(o)
		var rl *api.RateLimited
		if !errors.As(err, &rl) {
			return err
		}
		d.warns.Warn(d.log, "INTAKE RATE LIMIT: raw jobs arrive faster than the raw door's rate; each waits on its connection until it is its turn",
			"door", rl.Door, "rate_per_second", rl.Rate, "burst", rl.Burst, "key", "[spool] "+rl.Key)
		t := d.clock.NewTimer(rl.RetryAfter)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("raw job waiting for the rate limit: %w", ctx.Err())
		case <-t.C():
		}
	}
}

// refused notes a task the spool or a door refused with err: a door over
// its quota or rate is logged (rate-limited) and reported; it returns
// whether the health report changed.
func (d *doors) refused(err error) bool {
	var qe *spool.QuotaError
	var rl *api.RateLimited
	switch {
	case errors.As(err, &qe):
		door := OriginDoor(qe.Origin)
		d.warns.Warn(d.log, "SPOOL QUOTA REACHED: a door's tickets fill its share of the spool; its new tickets are refused until printed ones age out (retention), the other doors still get in",
			"door", door, "used_bytes", qe.Used, "quota_bytes", qe.Quota, "quota", d.quotas[door].String(), "key", "[spool] "+config.QuotaKey(door))
		d.mu.Lock()
		_, was := d.over[qe.Origin]
		d.over[qe.Origin] = qe
		d.mu.Unlock()
		return !was
	case errors.As(err, &rl):
		d.warns.Warn(d.log, "INTAKE RATE LIMIT: a door takes tickets faster than its rate; the extra ones are asked to come back later",
			"door", rl.Door, "rate_per_second", rl.Rate, "burst", rl.Burst, "key", "[spool] "+rl.Key)
		d.mu.Lock()
		defer d.mu.Unlock()
		// The first trip since the door was last reported clear changes
		// the health report.
		o := DoorOrigin(rl.Door)
		was := d.rateShown[o]
		d.rateShown[o] = true
		return !was
	}
	return false
}

// accepted notes a task of origin o got in: its door is not over its
// quota any more. It returns whether the health report changed.
func (d *doors) accepted(o spool.Origin) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.over[o]; ok {
		delete(d.over, o)
		return true
	}
	return false
}

// problem is what the health report says of the doors: the first door over
// its quota, else the first over its rate within rateWindow, else "".
func (d *doors) problem() string {
	now := d.clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, door := range config.Doors {
		if qe := d.over[DoorOrigin(door)]; qe != nil {
			return fmt.Sprintf("the %s door's tickets fill their share of the spool (%s of %s, [spool] %s = %q): its new tickets are refused until printed ones age out; the other doors still get in. Raise %s or max_size, or find who floods it",
				door, spool.FormatSize(qe.Used), spool.FormatSize(qe.Quota), config.QuotaKey(door), d.quotas[door].String(), config.QuotaKey(door))
		}
	}
	for o, at := range d.rated {
		if now.Sub(at) >= rateWindow {
			delete(d.rated, o)
			delete(d.rateShown, o)
		}
	}
	for _, door := range config.Doors {
		if _, ok := d.rated[DoorOrigin(door)]; ok {
			b := d.buckets[DoorOrigin(door)]
			return fmt.Sprintf("the %s door got tickets faster than its rate ([spool] %s = %g a second) in the last minute; the extra ones were asked to come back later. Raise %s, or find who floods it",
				door, config.RateKey(door), b.rate, config.RateKey(door))
		}
	}
	return ""
}
