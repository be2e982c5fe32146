package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Errors of the device flow (RFC 8628 §3.5), for the token endpoint's
// answers, and of deciding a code.
var (
	// ErrPending: not decided yet (authorization_pending).
	ErrPending = errors.New("authorization pending")
	// ErrSlowDown: polled faster than the interval (slow_down); the
	// interval grew by five seconds.
	ErrSlowDown = errors.New("polling too fast")
	// ErrExpiredCode: the code expired (expired_token).
	ErrExpiredCode = errors.New("the code expired")
	// ErrDenied: a manager refused it (access_denied).
	ErrDenied = errors.New("the pairing was refused")
	// ErrDecided: the code was already approved, refused or used.
	ErrDecided = errors.New("the code was already decided")
)

// slowDownStep is what RFC 8628 §3.5 adds to the interval on each
// slow_down.
const slowDownStep = 5 * time.Second

// userCodeChars are the characters of a user code: consonants only, so no
// word is spelt and no 0/O or 1/I is confused.
const userCodeChars = "BCDFGHJKLMNPQRSTVWXZ"

// Pairing is one device authorization request, kept under the hash of its
// device code (the code itself is a secret of the agent).
type Pairing struct {
	UserCode string        `json:"user_code"`
	Created  time.Time     `json:"created"`
	Expires  time.Time     `json:"expires"`
	Interval time.Duration `json:"interval"`
	LastPoll time.Time     `json:"last_poll,omitzero"`
	Status   string        `json:"status"` // pending, approved, denied, used
	Store    string        `json:"store,omitempty"`
}

// NewPairing starts a device authorization: it returns the device code
// (the agent's secret) and the user code a manager types or scans.
func (s *Store) NewPairing(ctx context.Context, now time.Time, lifetime, interval time.Duration) (deviceCode, userCode string, err error) {
	deviceCode, err = newSecret("pgp_")
	if err != nil {
		return "", "", err
	}
	h := hashSecret(deviceCode)
	for range 8 {
		userCode, err = newUserCode()
		if err != nil {
			return "", "", err
		}
		if _, err = s.pairings.Create(ctx, "u."+NormalizeUserCode(userCode), []byte(h)); err == nil {
			break
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return "", "", fmt.Errorf("store: new pairing: %w", kvErr(err))
		}
	}
	if err != nil {
		return "", "", fmt.Errorf("store: new pairing: no free user code: %w", err)
	}
	p := Pairing{UserCode: userCode, Created: now, Expires: now.Add(lifetime), Interval: interval, Status: "pending"}
	if _, err := s.pairings.Create(ctx, "d."+h, mustJSON(p)); err != nil {
		return "", "", fmt.Errorf("store: new pairing: %w", kvErr(err))
	}
	return deviceCode, userCode, nil
}

// PollPairing answers an agent's poll with its device code: the device
// token once a manager approved (single use: the next poll gets
// ErrNotFound), else ErrPending, ErrSlowDown, ErrExpiredCode, ErrDenied or
// ErrNotFound.
func (s *Store) PollPairing(ctx context.Context, deviceCode string, now time.Time) (string, error) {
	var token string
	var answer, refused error // the poll's answer; the pairing's end, returned as it is
	var interval time.Duration
	_, err := casJSON(ctx, s.pairings, "d."+hashSecret(deviceCode), func(p *Pairing, found bool) (bool, error) {
		token, answer, refused = "", nil, nil
		switch {
		case !found || p.Status == "used":
			refused = ErrNotFound
		case !now.Before(p.Expires):
			refused = ErrExpiredCode
		case p.Status == "denied":
			refused = ErrDenied
		case p.Status == "pending" && !p.LastPoll.IsZero() && now.Sub(p.LastPoll) < p.Interval-p.Interval/5:
			// Faster than the interval, less a fifth for network jitter.
			p.Interval += slowDownStep
			answer = ErrSlowDown
		case p.Status == "pending":
			answer = ErrPending
		}
		if refused != nil {
			return false, refused
		}
		if answer == nil { // approved
			var err error
			if _, token, err = s.AddDevice(ctx, p.Store, ""); err != nil {
				refused = err
				return false, err
			}
			p.Status = "used"
		}
		p.LastPoll, interval = now, p.Interval
		return true, nil
	})
	switch {
	case err != nil && err == refused:
		return "", err
	case err != nil:
		return "", fmt.Errorf("store: poll pairing: %w", err)
	case answer != nil:
		return "", fmt.Errorf("%w; poll every %v", answer, interval)
	}
	return token, nil
}

// DecidePairing approves a user code for a store (the device token the
// agent gets belongs to it), or refuses it. ErrNotFound for an unknown
// code, ErrExpiredCode, ErrDecided for one decided before.
func (s *Store) DecidePairing(ctx context.Context, userCode string, approve bool, store StoreInfo, now time.Time) error {
	return s.changePairing(ctx, userCode, now, func(p *Pairing) error {
		if p.Status != "pending" {
			return ErrDecided
		}
		if !now.Before(p.Expires) {
			return ErrExpiredCode
		}
		if approve {
			p.Status, p.Store = "approved", store.ID
		} else {
			p.Status = "denied"
		}
		return nil
	})
}

// ExpirePairing makes a pending code expire now (the test API's expire).
func (s *Store) ExpirePairing(ctx context.Context, userCode string, now time.Time) error {
	return s.changePairing(ctx, userCode, now, func(p *Pairing) error {
		if p.Status != "pending" {
			return ErrDecided
		}
		p.Expires = now
		return nil
	})
}

func (s *Store) changePairing(ctx context.Context, userCode string, now time.Time, change func(p *Pairing) error) error {
	e, err := s.pairings.Get(ctx, "u."+NormalizeUserCode(userCode))
	if err != nil {
		return kvErr(err)
	}
	var refused error // change's own answer, returned as it is
	_, err = casJSON(ctx, s.pairings, "d."+string(e.Value()), func(p *Pairing, found bool) (bool, error) {
		if !found {
			refused = ErrNotFound
		} else {
			refused = change(p)
		}
		return refused == nil, refused
	})
	if err != nil && err != refused {
		return fmt.Errorf("store: pairing: %w", err)
	}
	return err
}

// NormalizeUserCode is how a typed user code is compared: upper case,
// without dashes and spaces.
func NormalizeUserCode(c string) string {
	c = strings.ToUpper(c)
	return strings.NewReplacer("-", "", " ", "").Replace(c)
}

// newUserCode makes a code like "BCDF-GHJK" (20^8 codes).
func newUserCode() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("store: random: %w", err)
	}
	out := make([]byte, 0, 9)
	for i, v := range b {
		if i == 4 {
			out = append(out, '-')
		}
		out = append(out, userCodeChars[int(v)%len(userCodeChars)])
	}
	return string(out), nil
}
