package backoff

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestBackoffExponential ensures delays grow by Factor from Base and stop at
// Cap, even for attempt numbers whose exact value would overflow.
func TestBackoffExponential(t *testing.T) {
	b := Backoff{Base: time.Second, Factor: 2, Cap: time.Minute}
	var got []time.Duration
	for a := -1; a <= 7; a++ {
		got = append(got, b.Delay(a))
	}
	want := []time.Duration{1, 1, 2, 4, 8, 16, 32, 60, 60}
	for i := range want {
		want[i] *= time.Second
	}
	if !slices.Equal(got, want) {
		t.Errorf("delays %v, want %v", got, want)
	}
	if d := b.Delay(1 << 30); d != time.Minute {
		t.Errorf("huge attempt gave %v, want the cap", d)
	}
	uncapped := Backoff{Base: time.Second, Factor: 3}
	if d := uncapped.Delay(1000); d <= 0 {
		t.Errorf("uncapped huge attempt gave %v, want a large positive delay", d)
	}
}

// TestBackoffSchedule ensures an explicit schedule is followed step by step
// and then repeats its last step.
func TestBackoffSchedule(t *testing.T) {
	s := []time.Duration{5 * time.Second, 15 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute}
	b := Backoff{Schedule: s}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	for a := range 8 {
		want := s[min(a, len(s)-1)]
		if d := b.Delay(a); d != want {
			t.Errorf("attempt %d: %v, want %v", a, d, want)
		}
	}
}

// TestBackoffJitter ensures ±fraction jitter stays within its band and under
// Cap, full jitter stays within [0, delay], both actually spread, and a seeded
// source reproduces the same delays.
func TestBackoffJitter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		b      Backoff
		lo, hi time.Duration
	}{
		{"plusminus", Backoff{Base: 10 * time.Second, Factor: 1, Jitter: 0.2}, 8 * time.Second, 12 * time.Second},
		{"capped", Backoff{Base: 10 * time.Second, Factor: 1, Jitter: 0.5, Cap: 11 * time.Second}, 5 * time.Second, 11 * time.Second},
		{"full", Backoff{Base: 10 * time.Second, Factor: 1, FullJitter: true}, 0, 10 * time.Second},
		{"schedule", Backoff{Schedule: []time.Duration{time.Minute}, Jitter: 0.1}, 54 * time.Second, 66 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.b.Rand = rand.New(rand.NewPCG(7, 8))
			distinct := map[time.Duration]bool{}
			var first []time.Duration
			for i := range 1000 {
				d := tc.b.Delay(0)
				if d < tc.lo || d > tc.hi {
					t.Fatalf("delay %v outside [%v, %v]", d, tc.lo, tc.hi)
				}
				distinct[d] = true
				if i < 5 {
					first = append(first, d)
				}
			}
			if len(distinct) < 100 {
				t.Errorf("only %d distinct delays in 1000: jitter is not spreading", len(distinct))
			}
			tc.b.Rand = rand.New(rand.NewPCG(7, 8))
			for i, want := range first {
				if d := tc.b.Delay(0); d != want {
					t.Fatalf("seeded rerun %d: %v, want %v", i, d, want)
				}
			}
		})
	}
}

// TestBackoffValidate ensures nonsensical policies are refused with an error
// callers can recognise.
func TestBackoffValidate(t *testing.T) {
	for _, b := range []Backoff{
		{},
		{Base: time.Second, Factor: 0.5},
		{Base: time.Second, Factor: 2, Cap: -1},
		{Base: time.Second, Factor: 2, Jitter: 1.5},
		{Schedule: []time.Duration{time.Second, 0}},
	} {
		if err := b.Validate(); !errors.Is(err, ErrInvalidBackoff) {
			t.Errorf("%+v: Validate() = %v, want ErrInvalidBackoff", b, err)
		}
	}
	if err := (Backoff{Base: time.Second, Factor: 2, Cap: time.Hour, Jitter: 0.2}).Validate(); err != nil {
		t.Errorf("valid policy refused: %v", err)
	}
}
