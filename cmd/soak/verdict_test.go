package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

// synth builds a series of n samples every step seconds from f(t).
func synth(name string, n int, step float64, f func(t float64) float64) Series {
	s := Series{Name: name}
	for i := range n {
		t := float64(i) * step
		s.T = append(s.T, t)
		s.V = append(s.V, f(t))
	}
	return s
}

func TestFitSlope(t *testing.T) {
	s := synth("line", 10, 1, func(t float64) float64 { return 3 + 2*t })
	b, mean := fit(s.T, s.V)
	if math.Abs(b-2) > 1e-9 || math.Abs(mean-12) > 1e-9 {
		t.Fatalf("fit = %v, %v; want 2, 12", b, mean)
	}
}

func TestJudgeLevel(t *testing.T) {
	rule := LevelRule{RelPerHour: 0.10, AbsFloor: 10}
	// Two hours sampled every minute.
	const n, step = 121, 60.0
	cases := []struct {
		name string
		f    func(t float64) float64
		pass bool
	}{
		{"flat", func(float64) float64 { return 100 }, true},
		// Noise that a healthy agent shows: ±5 around 100.
		{"flat noisy", func(t float64) float64 { return 100 + 5*math.Sin(t/37) }, true},
		// Warm-up in the first half, flat after: only the second half counts.
		{"warm-up then flat", func(t float64) float64 { return 100 + 60*math.Min(t/3600, 1) }, true},
		// A leak: +20 per hour on ~150 is ~13%/h and +20 across the half.
		{"growing", func(t float64) float64 { return 100 + 20*t/3600 }, false},
		// Sawtooth: grows 50 then drops, every 10 minutes (a cache that
		// empties): levels off over many teeth.
		{"sawtooth", func(t float64) float64 { return 100 + 50*math.Mod(t, 600)/600 }, true},
		// A sawtooth whose floor rises is a leak.
		{"rising sawtooth", func(t float64) float64 { return 100 + 50*math.Mod(t, 600)/600 + 30*t/3600 }, false},
	}
	for _, c := range cases {
		v := JudgeLevel(synth(c.name, n, step, c.f), rule)
		if !v.Judged || v.Pass != c.pass {
			t.Errorf("%s: judged %v pass %v, want pass %v: %s", c.name, v.Judged, v.Pass, c.pass, v.Detail)
		}
	}
	// Steep relative growth below the absolute floor is noise, not a leak.
	small := JudgeLevel(synth("small", n, step, func(t float64) float64 { return 10 + 5*t/7200 }), rule)
	if !small.Pass {
		t.Errorf("growth of 2.5 under the floor of 10 failed: %s", small.Detail)
	}
	short := JudgeLevel(synth("short", 6, step, func(t float64) float64 { return t }), rule)
	if short.Judged || !short.Pass || !strings.Contains(short.Detail, "not judged") {
		t.Errorf("6 samples: %+v, want not judged", short)
	}
}

func TestJudgeSpool(t *testing.T) {
	rule := SpoolRule{Retention: 10 * time.Minute, PruneEvery: time.Hour, Margin: 0.25}
	const rate = 10.0 // tasks/s
	const perTask = 3000.0
	accepted := func(n int) Series {
		return synth("accepted", n, 60, func(t float64) float64 { return rate * t })
	}
	// What the agent does: grow with the tasks held, at each hourly
	// prune keep only the last Retention of them.
	pruned := func(t float64) float64 {
		sincePrune := math.Mod(t, 3600)
		held := sincePrune
		if t >= 3600 {
			held += rule.Retention.Seconds()
		}
		return perTask * rate * held
	}
	v := JudgeSpool(synth("spool", 121, 60, pruned), accepted(121), rule)
	if !v.Judged || !v.Pass {
		t.Errorf("pruned hourly: %+v", v)
	}
	// Retention never prunes: the file keeps growing past the prune.
	v = JudgeSpool(synth("spool", 121, 60, func(t float64) float64 { return perTask * rate * t }), accepted(121), rule)
	if v.Pass || !strings.Contains(v.Detail, "NOT BOUNDED BY RETENTION") {
		t.Errorf("never pruned: %+v", v)
	}
	// Pruned, but the file grows back past the ceiling (something else
	// accumulates: e.g. tombstones never expire).
	leaky := func(t float64) float64 { return pruned(t) + perTask*rate*math.Max(0, t-3600)*0.6 }
	v = JudgeSpool(synth("spool", 121, 60, leaky), accepted(121), rule)
	if v.Pass {
		t.Errorf("grows back past the ceiling: %+v", v)
	}
	// A run shorter than the first prune: linear growth in the tasks held
	// passes, bytes per task doubling does not.
	v = JudgeSpool(synth("spool", 41, 60, func(t float64) float64 { return perTask * rate * t }), accepted(41), rule)
	if !v.Judged || !v.Pass {
		t.Errorf("short linear: %+v", v)
	}
	v = JudgeSpool(synth("spool", 41, 60, func(t float64) float64 { return perTask * rate * t * t / 600 }), accepted(41), rule)
	if v.Pass {
		t.Errorf("short quadratic: %+v", v)
	}

	// A short retention: the agent prunes every quarter of it, and the
	// first ticks find nothing old enough; from the first tick at or after
	// Retention the file holds Retention plus up to one interval of tasks,
	// without needing to shrink (bbolt reuses the freed pages).
	quick := SpoolRule{Retention: 10 * time.Minute, PruneEvery: 150 * time.Second, Margin: 0.25}
	steady := func(t float64) float64 {
		held := t
		if t >= 600 {
			held = 600 + math.Mod(t, 150)
		}
		return perTask * rate * held
	}
	v = JudgeSpool(synth("spool", 61, 60, steady), accepted(61), quick)
	if !v.Judged || !v.Pass || !strings.Contains(v.Detail, "first effective prune (10m0s)") {
		t.Errorf("short retention, pruned: %+v", v)
	}
	v = JudgeSpool(synth("spool", 61, 60, func(t float64) float64 { return perTask * rate * t }), accepted(61), quick)
	if v.Pass {
		t.Errorf("short retention, never pruned: %+v", v)
	}
	// Shorter than the first effective prune: judged as growth only.
	v = JudgeSpool(synth("spool", 9, 60, steady), accepted(9), quick)
	if !v.Judged || !v.Pass || !strings.Contains(v.Detail, "no prune within the run") {
		t.Errorf("short retention, short run: %+v", v)
	}
}

func TestParseStatusAndMetric(t *testing.T) {
	st := parseStatus("Name:\tprintgate\nVmRSS:\t   22528 kB\nRssAnon:\t    8192 kB\nThreads:\t7\n")
	if st["VmRSS"] != 22528*1024 || st["RssAnon"] != 8192*1024 || len(st) != 2 {
		t.Errorf("parseStatus = %v", st)
	}
	v, err := metricValue(strings.NewReader("# HELP go_goroutines x\n# TYPE go_goroutines gauge\ngo_goroutines 31\ngo_threads 7\n"), "go_goroutines")
	if err != nil || v != 31 {
		t.Errorf("metricValue = %v, %v", v, err)
	}
	if _, err := metricValue(strings.NewReader("go_threads 7\n"), "go_goroutines"); err == nil {
		t.Error("missing metric: no error")
	}
}
