package config

import (
	"fmt"
	"strconv"
	"strings"
)

// The intake doors [spool] sets a quota and a rate for, so a
// flood through one door (the raw port takes anyone on the LAN) can fill
// neither the disk nor the spool the other doors need.
const (
	DoorAPI     = "api"     // the LAN API (origin local)
	DoorCloud   = "cloud"   // the cloud link (origin cloud)
	DoorRaw     = "raw"     // the raw ports (origin raw)
	DoorReprint = "reprint" // reprint and retry from the page or the cloud (origin manager)
)

// Doors lists the doors in the order messages and the sample config name
// them.
var Doors = []string{DoorAPI, DoorCloud, DoorRaw, DoorReprint}

// Quota is one door's share of the spool: Percent of the spool's cap, or
// Bytes; exactly one is set.
type Quota struct {
	Percent int
	Bytes   int64
}

// Of is the quota in bytes for a spool capped at cap.
func (q Quota) Of(cap int64) int64 {
	if q.Bytes > 0 {
		return q.Bytes
	}
	return cap / 100 * int64(q.Percent)
}

// String is the quota as the config writes it: "25%" or a number of bytes.
func (q Quota) String() string {
	if q.Bytes > 0 {
		return strconv.FormatInt(q.Bytes, 10)
	}
	return fmt.Sprintf("%d%%", q.Percent)
}

// RateBurstSeconds is how many seconds' worth of a door's rate it may take
// at once (the token bucket's depth): a lunch rush or a cloud's backlog
// after an outage gets in at once, a flood only at the rate.
const RateBurstSeconds = 10

// DefaultQuotas and DefaultRates are the doors' limits when [spool] does
// not set them: the raw port, open to anyone on the LAN, gets the smallest
// share; rates are tasks per second, above the busiest store's pace (the
// stress model's peak minute is 73 a second, with one-second bursts of
// 300), so they bound a flood and never a lunch rush.
func DefaultQuotas() map[string]Quota {
	return map[string]Quota{DoorAPI: {Percent: 50}, DoorCloud: {Percent: 50}, DoorRaw: {Percent: 25}, DoorReprint: {Percent: 25}}
}

// DefaultRates: see DefaultQuotas.
func DefaultRates() map[string]float64 {
	return map[string]float64{DoorAPI: 200, DoorCloud: 200, DoorRaw: 50, DoorReprint: 20}
}

// QuotaKey and RateKey name a door's keys in [spool], for messages.
func QuotaKey(door string) string { return "quota_" + door }

// RateKey: see QuotaKey.
func RateKey(door string) string { return "rate_" + door }

// size reads a size key: a number of bytes or text such as "512MiB".
func (t *table) size(key string) (int64, bool) {
	v, ok := t.get(key)
	if !ok {
		return 0, false
	}
	switch x := v.(type) {
	case int64:
		return x, true
	case string:
		n, err := parseSize(x)
		if err != nil {
			t.errf(key, "%v", err)
			return 0, false
		}
		return n, true
	}
	t.wrongType(key, `a size such as "512MiB" or a number of bytes`, v)
	return 0, false
}

// doors reads the quota_* and rate_* keys of [spool].
func (p *parser) doors(t *table, s *Spool) {
	for _, d := range Doors {
		key := QuotaKey(d)
		if v, ok := t.get(key); ok {
			if text, isText := v.(string); isText && strings.HasSuffix(strings.TrimSpace(text), "%") {
				n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(text), "%"))
				if err != nil || n < 1 || n > 100 {
					t.errf(key, "%q is not a share of the spool: write a whole percentage from \"1%%\" to \"100%%\", or a size such as \"64MiB\"", text)
				} else {
					s.Quota[d] = Quota{Percent: n}
				}
			} else if n, ok := t.size(key); ok {
				if n < 1<<20 {
					t.errf(key, "%v is too small: a door needs room for at least one ticket; use at least \"1MiB\", or a share such as \"25%%\"", v)
				} else {
					s.Quota[d] = Quota{Bytes: n}
				}
			}
		}
		key = RateKey(d)
		if n, ok := t.float(key); ok {
			if n < 0 {
				t.errf(key, "%v must not be negative: it is the tasks per second the %s door takes (0 turns the limit off)", n, d)
			} else {
				s.Rate[d] = n
			}
		}
	}
}
