package main

import (
	"fmt"
	"math"
	"time"
)

// Series is one measured quantity over the run: V[i] was sampled T[i]
// seconds after the agent started.
type Series struct {
	Name string
	Unit string
	T    []float64
	V    []float64
}

// Verdict is the judgement of one series: whether it levelled off, and the
// figures that decided it, for the report.
type Verdict struct {
	Name string
	// Judged is false when the run was too short to say anything; such a
	// verdict passes (there is no evidence of growth) but the report says so.
	Judged bool
	Pass   bool
	Detail string
}

// LevelRule says when a series "keeps growing": over the second half of the
// run (warm-up excluded) the least-squares slope, as a fraction of the
// series' mean per hour, exceeds RelPerHour AND the growth that slope
// amounts to across that half exceeds AbsFloor (in the series' unit). The
// floor keeps a short run's noise (a few goroutines of a reconnect, a page
// or two of RSS) from reading as a leak; the relative slope is what a leak
// over hours looks like.
type LevelRule struct {
	RelPerHour float64
	AbsFloor   float64
}

// minJudged is the fewest second-half samples a slope is fitted to.
const minJudged = 5

// fit returns the least-squares slope of v over t (per unit of t) and the
// mean of v. It needs at least two distinct t.
func fit(t, v []float64) (slope, mean float64) {
	n := float64(len(t))
	var st, sv float64
	for i := range t {
		st += t[i]
		sv += v[i]
	}
	mt, mv := st/n, sv/n
	var num, den float64
	for i := range t {
		num += (t[i] - mt) * (v[i] - mv)
		den += (t[i] - mt) * (t[i] - mt)
	}
	if den == 0 {
		return 0, mv
	}
	return num / den, mv
}

// secondHalf returns the samples taken at or after half the run's length.
func secondHalf(s Series) (t, v []float64) {
	if len(s.T) == 0 {
		return nil, nil
	}
	mid := s.T[len(s.T)-1] / 2
	for i := range s.T {
		if s.T[i] >= mid && !math.IsNaN(s.V[i]) {
			t = append(t, s.T[i])
			v = append(v, s.V[i])
		}
	}
	return t, v
}

// JudgeLevel applies r to s.
func JudgeLevel(s Series, r LevelRule) Verdict {
	t, v := secondHalf(s)
	if len(t) < minJudged {
		return Verdict{Name: s.Name, Pass: true, Detail: fmt.Sprintf("not judged: %d samples in the second half, need %d", len(t), minJudged)}
	}
	b, mean := fit(t, v)
	span := t[len(t)-1] - t[0]
	growth := b * span
	rel := 0.0
	if mean != 0 {
		rel = b * 3600 / math.Abs(mean)
	}
	grows := rel > r.RelPerHour && growth > r.AbsFloor
	d := fmt.Sprintf("second half: mean %s, slope %+.1f%%/h (limit %.0f%%/h), fitted change %s over %s (floor %s)",
		fmtVal(mean, s.Unit), rel*100, r.RelPerHour*100, fmtSigned(growth, s.Unit), time.Duration(span*float64(time.Second)).Round(time.Second), fmtVal(r.AbsFloor, s.Unit))
	switch {
	case grows:
		d = "KEEPS GROWING — " + d
	case rel > r.RelPerHour:
		d = "rises within the noise floor — " + d
	default:
		d = "levels off — " + d
	}
	return Verdict{Name: s.Name, Judged: true, Pass: !grows, Detail: d}
}

// SpoolRule judges the spool file against the agent's retention: the agent
// prunes finished tasks older than Retention every PruneEvery (from its
// start; agent/retention.go) and compacts after a large prune. So the file
// grows with the tasks held until the first prune that finds tasks older
// than Retention, and must then stay under what Retention+PruneEvery of
// tasks take (bbolt reuses the freed pages; compaction may also shrink
// the file, which the rule does not require).
type SpoolRule struct {
	Retention  time.Duration
	PruneEvery time.Duration
	// Margin is the slack on the ceiling, e.g. 0.25 for 25%.
	Margin float64
	// Step is how much the file may be ahead of its data: bbolt doubles a
	// small file and grows a large one by its AllocSize (16 MiB by
	// default), so a file can hold up to one step of free space.
	Step float64
}

// JudgeSpool applies r to the spool size series, with accepted (tasks
// accepted so far, sampled at the same times) to compare per-task cost when
// the run is too short to see a prune.
func JudgeSpool(size, accepted Series, r SpoolRule) Verdict {
	n := len(size.T)
	if n < 2 {
		return Verdict{Name: size.Name, Pass: true, Detail: "not judged: fewer than 2 samples"}
	}
	end := size.T[n-1]
	// The first prune that can remove anything is the first tick at or
	// after Retention: with a short retention the agent prunes every
	// quarter of it, and the first ticks find nothing old enough.
	first := r.PruneEvery
	if r.Retention > first {
		first = time.Duration(math.Ceil(r.Retention.Seconds()/r.PruneEvery.Seconds())) * r.PruneEvery
	}
	if end < first.Seconds() {
		// No prune can have removed anything: the file grows with the
		// tasks it holds. What can still be checked is that it grows no
		// faster than linearly in them: bytes per accepted task at the end
		// against at a quarter of the run. bbolt grows its file in steps of
		// up to double its size, so the ratio of a linear growth lies
		// between 0.5 and 2; a quadratic one's is about 4 (2 to 8).
		ref := -1
		for i := range size.T {
			if size.T[i] >= end/4 && accepted.V[i] > 0 && !math.IsNaN(size.V[i]) {
				ref = i
				break
			}
		}
		if ref < 0 || accepted.V[n-1] <= 0 || ref == n-1 || math.IsNaN(size.V[n-1]) {
			return Verdict{Name: size.Name, Pass: true, Detail: "not judged: too few samples with tasks accepted"}
		}
		perRef := size.V[ref] / accepted.V[ref]
		perEnd := size.V[n-1] / accepted.V[n-1]
		pass := perEnd <= perRef*2
		d := fmt.Sprintf("no prune within the run (the first that can remove a task is %s after start, run %s): grows with the tasks held; file size per accepted task %.0f B at %s, %.0f B at the end (limit 2×, bbolt's file steps)",
			first, time.Duration(end*float64(time.Second)).Round(time.Second), perRef, time.Duration(size.T[ref]*float64(time.Second)).Round(time.Second), perEnd)
		if !pass {
			d = "GROWS FASTER THAN THE TASKS HELD — " + d
		}
		return Verdict{Name: size.Name, Judged: true, Pass: pass, Detail: d}
	}
	// Bytes per task before the first prune (the file holds every task
	// then), and the run's rate, give what Retention plus one prune
	// interval of tasks take: the most the file should hold from then on.
	ref := -1
	for i := range size.T {
		if size.T[i] < first.Seconds() && accepted.V[i] > 0 && !math.IsNaN(size.V[i]) {
			ref = i
		}
	}
	if ref < 0 || accepted.V[n-1] <= 0 {
		return Verdict{Name: size.Name, Pass: true, Detail: "not judged: no sample with tasks accepted before the first prune"}
	}
	perTask := size.V[ref] / accepted.V[ref]
	rate := accepted.V[n-1] / end
	ceiling := perTask*rate*(r.Retention+r.PruneEvery).Seconds()*(1+r.Margin) + r.Step
	worst, at := 0.0, 0.0
	for i := range size.T {
		if size.T[i] >= first.Seconds() && !math.IsNaN(size.V[i]) && size.V[i] > worst {
			worst, at = size.V[i], size.T[i]
		}
	}
	pass := worst <= ceiling
	d := fmt.Sprintf("largest from the first effective prune (%s) on: %s at %s, ceiling %s (%.0f B a task before it × %.1f tasks/s × (retention %s + prune interval %s) × %.2f + %s of bbolt file growth)",
		first, fmtVal(worst, size.Unit), time.Duration(at*float64(time.Second)).Round(time.Second), fmtVal(ceiling, size.Unit),
		perTask, rate, r.Retention, r.PruneEvery, 1+r.Margin, fmtVal(r.Step, size.Unit))
	if pass {
		d = "bounded by retention — " + d
	} else {
		d = "NOT BOUNDED BY RETENTION — " + d
	}
	return Verdict{Name: size.Name, Judged: true, Pass: pass, Detail: d}
}

// fmtVal prints v in unit, scaling bytes to MiB.
func fmtVal(v float64, unit string) string {
	if unit == "B" {
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	}
	return fmt.Sprintf("%.1f%s", v, unit)
}

func fmtSigned(v float64, unit string) string {
	if v >= 0 {
		return "+" + fmtVal(v, unit)
	}
	return "-" + fmtVal(-v, unit)
}
