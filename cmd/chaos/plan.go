package main

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"
)

// The fault model (docs/DESIGN.md, "What good looks like"). Shares
// are of each printer's time (8 printers make "10% of printers" less than
// one printer, so the chaos run gives every printer that share of spells).
const (
	dropShare     = 0.15 // jobs whose connection is dropped mid-job
	offlineShare  = 0.10 // time each printer spends unplugged
	paperShare    = 0.05 // time each printer spends out of paper
	flapShare     = 0.05 // time each printer spends flapping (offline on and off)
	wanDownShare  = 0.40 // time the WAN is down
	burstRate     = 300  // tasks per second in a burst
	burstLen      = time.Second
	burstGapMin   = 10 * time.Second
	burstGapMax   = 25 * time.Second
	offlineMin    = 5 * time.Second
	offlineMax    = 60 * time.Second
	paperMin      = 5 * time.Second
	paperMax      = 20 * time.Second
	flapMin       = 5 * time.Second
	flapMax       = 20 * time.Second
	flapToggleMin = 200 * time.Millisecond
	flapToggleMax = 1500 * time.Millisecond
	wanDownMin    = 5 * time.Second
	wanDownMax    = 40 * time.Second
	wanFullLength = 4 * time.Minute // loads shorter than this get shorter spells and WAN windows
)

// spellKind is what takes a printer out for a while.
type spellKind string

const (
	spellOffline  spellKind = "offline"
	spellPaperOut spellKind = "paper_out"
	spellFlap     spellKind = "flapping"
)

// window is a span of the run, as offsets from its start.
type window struct {
	Start, End time.Duration
}

// spell is one fault on one printer. Flapping spells carry the offsets at
// which the printer goes offline (even index) and back (odd index).
type spell struct {
	Kind spellKind
	window
	Toggles []time.Duration
}

// task is one ticket the run submits.
type task struct {
	No    string
	At    time.Duration // when it is submitted, from the start of the load
	Cloud bool          // pushed as a cloud job; else posted to the LAN API
	// Raw: sent as an ESC/POS job to Printer's raw port by a POS worker
	// (No is then the job's tag, "R" and six digits); else Cloud says how.
	Raw     bool
	Printer int
}

// plan is everything the run will do, drawn from one seed before it
// starts, so a seed replays the same load and the same faults.
type plan struct {
	Seed     uint64
	Tasks    []task
	Length   time.Duration   // of the load: when the last task is submitted
	Spells   [][]spell       // per printer, in time order, never overlapping
	WANDown  []window        // in time order
	Kills    []time.Duration // when the agent is SIGKILLed
	DropSeed []uint64        // per printer: the seed of its mid-job drops
}

// planOptions shape a plan.
type planOptions struct {
	Seed     uint64
	Tasks    int
	Rate     float64 // tasks per second outside bursts
	Printers int
	Kills    int
	MaxLen   time.Duration // the load is squeezed into this if it would be longer
	// RawPrinters are the printers with a raw port; rawShare of the tasks
	// go to them as raw jobs. None: no raw jobs.
	RawPrinters []int
}

// rawShare is the share of tasks sent as raw jobs when there are raw ports.
const rawShare = 0.25

// newPlan draws the run's schedule. Arrivals are Poisson at Rate with a
// one-second burst at burstRate every 10–25 s; fault spells and WAN
// outages alternate with quiet gaps whose mean gives the target shares;
// kills are spread evenly with jitter.
func newPlan(o planOptions) (*plan, error) {
	for _, rp := range o.RawPrinters {
		if rp < 0 || rp >= o.Printers {
			return nil, fmt.Errorf("chaos: plan: raw printer %d of %d", rp, o.Printers)
		}
	}
	if o.Tasks < 1 || o.Rate <= 0 || o.Printers < 1 || o.Kills < 0 || o.MaxLen <= 0 {
		return nil, fmt.Errorf("chaos: plan: want tasks ≥ 1, rate > 0, printers ≥ 1, kills ≥ 0 and a duration (have %+v)", o)
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x0c4a05))
	p := &plan{Seed: o.Seed}

	// The load.
	var t float64 // seconds
	nextBurst := uniform(rng, burstGapMin, burstGapMax).Seconds()
	for i := 0; i < o.Tasks; i++ {
		if t >= nextBurst && t < nextBurst+burstLen.Seconds() {
			t += 1 / float64(burstRate)
		} else {
			if t >= nextBurst+burstLen.Seconds() {
				nextBurst = t + uniform(rng, burstGapMin, burstGapMax).Seconds()
			}
			t += rng.ExpFloat64() / o.Rate
			if t > nextBurst && t < nextBurst+burstLen.Seconds() {
				t = nextBurst
			}
		}
		tk := task{
			No:      fmt.Sprintf("CH%06d_v1", i),
			At:      time.Duration(t * float64(time.Second)),
			Cloud:   rng.IntN(2) == 1,
			Printer: rng.IntN(o.Printers),
		}
		if len(o.RawPrinters) > 0 && rng.Float64() < rawShare {
			tk.No, tk.Raw, tk.Cloud = fmt.Sprintf("R%06d", i), true, false
			tk.Printer = o.RawPrinters[rng.IntN(len(o.RawPrinters))]
		}
		p.Tasks = append(p.Tasks, tk)
	}
	p.Length = p.Tasks[len(p.Tasks)-1].At
	if p.Length > o.MaxLen {
		// Squeeze the same arrivals into the time there is: faster, never
		// longer than asked.
		f := float64(o.MaxLen) / float64(p.Length)
		for i := range p.Tasks {
			p.Tasks[i].At = time.Duration(float64(p.Tasks[i].At) * f)
		}
		p.Length = o.MaxLen
	}
	if p.Length < time.Second {
		p.Length = time.Second
	}

	// Printer spells: a quiet gap, then a spell of some kind, and so on;
	// the mean gap makes the spells the sum of the shares.
	type kindShare struct {
		kind     spellKind
		share    float64
		min, max time.Duration
	}
	kinds := []kindShare{
		{spellOffline, offlineShare, offlineMin, offlineMax},
		{spellPaperOut, paperShare, paperMin, paperMax},
		{spellFlap, flapShare, flapMin, flapMax},
	}
	// A short run gets shorter spells and gaps (the same shares), so the
	// 60-second test sees every kind of spell on several printers.
	if f := p.Length.Seconds() / wanFullLength.Seconds(); f < 1 {
		for i := range kinds {
			kinds[i].min = max(2*time.Second, time.Duration(float64(kinds[i].min)*f))
			kinds[i].max = max(kinds[i].min+time.Second, time.Duration(float64(kinds[i].max)*f))
		}
	}
	// A kind is drawn with a weight of its share over its mean length, so
	// that its spells take its share of the time.
	var total, weights, meanLen float64
	weight := make([]float64, len(kinds))
	for i, k := range kinds {
		total += k.share
		weight[i] = k.share / ((k.min + k.max).Seconds() / 2)
		weights += weight[i]
	}
	for i, k := range kinds {
		meanLen += weight[i] / weights * (k.min + k.max).Seconds() / 2
	}
	meanGap := meanLen * (1 - total) / total
	p.Spells = make([][]spell, o.Printers)
	for i := 0; i < o.Printers; i++ {
		at := rng.ExpFloat64() * meanGap / 2 // start some spells early
		for {
			start := time.Duration(at * float64(time.Second))
			if start >= p.Length {
				break
			}
			x := rng.Float64() * weights
			k := kinds[len(kinds)-1]
			for j, c := range kinds {
				if x < weight[j] {
					k = c
					break
				}
				x -= weight[j]
			}
			s := spell{Kind: k.kind, window: window{Start: start, End: start + uniform(rng, k.min, k.max)}}
			if s.Kind == spellFlap {
				for tt := s.Start; tt < s.End; tt += uniform(rng, flapToggleMin, flapToggleMax) {
					s.Toggles = append(s.Toggles, tt)
				}
				if len(s.Toggles)%2 == 1 {
					s.Toggles = append(s.Toggles, s.End) // end back online
				}
				s.End = s.Toggles[len(s.Toggles)-1]
			}
			p.Spells[i] = append(p.Spells[i], s)
			at = s.End.Seconds() + rng.ExpFloat64()*meanGap
		}
	}

	// The WAN: up for a while, down for 5–40 s, and so on, the up spans'
	// mean making the down share wanDownShare.
	// A short run (the 60-second test) gets shorter windows, so it still
	// sees several outages.
	downMin, downMax := wanDownMin, wanDownMax
	if f := p.Length.Seconds() / wanFullLength.Seconds(); f < 1 {
		downMin = max(2*time.Second, time.Duration(float64(downMin)*f))
		downMax = max(downMin+time.Second, time.Duration(float64(downMax)*f))
	}
	meanDown := (downMin + downMax).Seconds() / 2
	meanUp := meanDown * (1 - wanDownShare) / wanDownShare
	for at := uniform(rng, 0, time.Duration(meanUp*float64(time.Second))); at < p.Length; {
		w := window{Start: at, End: at + uniform(rng, downMin, downMax)}
		if w.End > p.Length {
			w.End = p.Length
		}
		p.WANDown = append(p.WANDown, w)
		at = w.End + uniform(rng, time.Duration(meanUp*0.5*float64(time.Second)), time.Duration(meanUp*1.5*float64(time.Second)))
	}

	// Kills: one in each of Kills equal slices of the load, at a random
	// point in its middle half, so they spread over the whole run.
	slice := p.Length / time.Duration(max(o.Kills, 1))
	for k := 0; k < o.Kills; k++ {
		p.Kills = append(p.Kills, time.Duration(k)*slice+slice/4+uniform(rng, 0, slice/2))
	}
	for i := 0; i < o.Printers; i++ {
		p.DropSeed = append(p.DropSeed, rng.Uint64())
	}
	return p, nil
}

// uniform draws a duration in [lo, hi).
func uniform(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// share is how much of [0, length) the windows cover (they may overlap
// nothing else of their own list).
func share(ws []window, length time.Duration) float64 {
	var d time.Duration
	for _, w := range ws {
		d += min(w.End, length) - min(w.Start, length)
	}
	return float64(d) / float64(length)
}

// spellShares is the share of the load each kind of spell took, averaged
// over the printers.
func (p *plan) spellShares() map[spellKind]float64 {
	out := map[spellKind]float64{}
	for _, list := range p.Spells {
		by := map[spellKind][]window{}
		for _, s := range list {
			by[s.Kind] = append(by[s.Kind], s.window)
		}
		for k, ws := range by {
			out[k] += share(ws, p.Length) / float64(len(p.Spells))
		}
	}
	return out
}

// faultEvent is one switch the fault driver makes at At.
type faultEvent struct {
	At      time.Duration
	Printer int // -1: the WAN
	Kind    spellKind
	On      bool
}

// events lists every printer and WAN switch of the plan in time order.
func (p *plan) events() []faultEvent {
	var out []faultEvent
	for i, list := range p.Spells {
		for _, s := range list {
			if s.Kind == spellFlap {
				for j, t := range s.Toggles {
					out = append(out, faultEvent{At: t, Printer: i, Kind: spellOffline, On: j%2 == 0})
				}
				continue
			}
			out = append(out, faultEvent{At: s.Start, Printer: i, Kind: s.Kind, On: true},
				faultEvent{At: s.End, Printer: i, Kind: s.Kind, On: false})
		}
	}
	for _, w := range p.WANDown {
		out = append(out, faultEvent{At: w.Start, Printer: -1, On: true}, faultEvent{At: w.End, Printer: -1, On: false})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}
