package printertest

import (
	"math/rand/v2"
	"sync"
	"time"
)

// ChaosOptions shape a random fault schedule. The same Seed gives the same
// sequence of faults, so a failing soak run can be replayed.
type ChaosOptions struct {
	Seed uint64
	// Every is the time between schedule steps; default 2 s.
	Every time.Duration
	// Kinds are the faults to draw from; default paper out, cover open,
	// offline, stall, drop and power cycle.
	Kinds []FaultKind
	// Rate is the chance that a step with no fault active starts one;
	// default 0.3.
	Rate float64
}

// chaosStep is one step of a schedule: a fault switched on (or fired, for
// one-shots) and how many steps it lasts.
type chaosStep struct {
	kind  FaultKind
	steps int
}

// chaosPlan draws the next n steps of the schedule for o: a zero kind means
// "nothing happens at this step".
func chaosPlan(o ChaosOptions, n int) []chaosStep {
	kinds := o.Kinds
	if len(kinds) == 0 {
		kinds = []FaultKind{FaultPaperOut, FaultCoverOpen, FaultOffline, FaultStall, FaultDrop, FaultPowerCycle}
	}
	rate := o.Rate
	if rate <= 0 {
		rate = 0.3
	}
	rng := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9E3779B97F4A7C15))
	out := make([]chaosStep, 0, n)
	busy := 0
	for range n {
		if busy > 0 {
			busy--
			out = append(out, chaosStep{})
			continue
		}
		if rng.Float64() >= rate {
			out = append(out, chaosStep{})
			continue
		}
		s := chaosStep{kind: kinds[rng.IntN(len(kinds))], steps: 1 + rng.IntN(4)}
		if s.kind == FaultDrop || s.kind == FaultPowerCycle {
			s.steps = 0
		}
		busy = s.steps
		out = append(out, s)
	}
	return out
}

// StartChaos runs a seeded random fault schedule on the printer in real
// time, one fault at a time, until stop is called or the printer closes.
// onFault, if not nil, hears each switch (for logs).
func (p *Printer) StartChaos(o ChaosOptions, onFault func(kind FaultKind, on bool)) (stop func()) {
	every := o.Every
	if every <= 0 {
		every = 2 * time.Second
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		var active FaultKind
		left := 0
		set := func(k FaultKind, on bool) {
			_ = p.SetFault(k, on)
			if onFault != nil {
				onFault(k, on)
			}
		}
		defer func() {
			if active != "" {
				set(active, false)
			}
		}()
		for {
			plan := chaosPlan(o, 64)
			o.Seed = o.Seed*6364136223846793005 + 1442695040888963407 // next block
			for _, s := range plan {
				select {
				case <-t.C:
				case <-quit:
					return
				case <-p.done:
					return
				}
				if active != "" {
					if left--; left <= 0 {
						set(active, false)
						active = ""
					}
					continue
				}
				if s.kind == "" {
					continue
				}
				set(s.kind, true)
				if s.steps > 0 {
					active, left = s.kind, s.steps
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-finished
	}
}
