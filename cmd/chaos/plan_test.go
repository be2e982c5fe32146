package main

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

func TestPlanSeeded(t *testing.T) {
	o := planOptions{Seed: 42, Tasks: 20000, Rate: 73, Printers: 8, Kills: 12, MaxLen: 10 * time.Minute}
	a, err := newPlan(o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newPlan(o)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed drew two different plans")
	}
	o.Seed = 43
	c, _ := newPlan(o)
	if reflect.DeepEqual(a.Tasks, c.Tasks) {
		t.Fatal("two seeds drew the same load")
	}

	// The load: about 73/s with bursts, so 20,000 tasks take 3–5 minutes;
	// about half of them cloud jobs; every printer used; times ascending.
	if a.Length < 3*time.Minute || a.Length > 5*time.Minute {
		t.Errorf("load of 20000 at 73/s lasts %s", a.Length)
	}
	cloud, per := 0, map[int]int{}
	peak := 0
	for i, tk := range a.Tasks {
		if tk.Cloud {
			cloud++
		}
		per[tk.Printer]++
		if i > 0 && tk.At < a.Tasks[i-1].At {
			t.Fatalf("task %d submitted before task %d", i, i-1)
		}
		// The most tasks in any one second: a burst.
		j := i
		for j < len(a.Tasks) && a.Tasks[j].At-tk.At < time.Second {
			j++
		}
		peak = max(peak, j-i)
	}
	if cloud < 9500 || cloud > 10500 {
		t.Errorf("%d of 20000 are cloud jobs, want about half", cloud)
	}
	if len(per) != 8 {
		t.Errorf("tasks go to %d printers, want 8", len(per))
	}
	if peak < 250 {
		t.Errorf("busiest second has %d tasks; want a burst near %d/s", peak, burstRate)
	}

	// Faults: shares near the model's, spells never overlap on a printer,
	// kills spread over the load.
	if s := share(a.WANDown, a.Length); s < 0.25 || s > 0.55 {
		t.Errorf("WAN down %.0f%% of the load, want about 40%%", 100*s)
	}
	// Each kind's share, over several seeds (one run's spells are few).
	sum := map[spellKind]float64{}
	for seed := uint64(100); seed < 110; seed++ {
		o.Seed = seed
		p, _ := newPlan(o)
		for k, x := range p.spellShares() {
			sum[k] += x / 10
		}
	}
	for k, want := range map[spellKind]float64{spellOffline: offlineShare, spellPaperOut: paperShare, spellFlap: flapShare} {
		if got := sum[k]; got < want*0.6 || got > want*1.4 {
			t.Errorf("%s takes %.1f%% of the time, want about %.0f%%", k, 100*got, 100*want)
		}
	}
	for i, list := range a.Spells {
		for k := 1; k < len(list); k++ {
			if list[k].Start < list[k-1].End {
				t.Errorf("p%d: spells %d and %d overlap", i, k-1, k)
			}
		}
	}
	if len(a.Kills) != 12 {
		t.Fatalf("%d kills", len(a.Kills))
	}
	for k, at := range a.Kills {
		slice := a.Length / 12
		if at < time.Duration(k)*slice || at >= time.Duration(k+1)*slice {
			t.Errorf("kill %d at %s is outside its slice of the load", k, at)
		}
	}
	ev := a.events()
	for k := 1; k < len(ev); k++ {
		if ev[k].At < ev[k-1].At {
			t.Fatal("fault events out of time order")
		}
	}
}

// TestPlanSqueezed: a load that would outlast the duration is compressed
// into it, and a short run still has WAN outages.
func TestPlanSqueezed(t *testing.T) {
	p, err := newPlan(planOptions{Seed: 7, Tasks: 3000, Rate: 50, Printers: 8, Kills: 3, MaxLen: 40 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if p.Length != 40*time.Second || p.Tasks[len(p.Tasks)-1].At > 40*time.Second {
		t.Errorf("load lasts %s, want squeezed into 40s", p.Length)
	}
	if len(p.WANDown) < 2 {
		t.Errorf("a 40 s run has %d WAN outages, want several", len(p.WANDown))
	}
	if _, err := newPlan(planOptions{Seed: 1, Tasks: 0, Rate: 1, Printers: 1, MaxLen: time.Second}); err == nil {
		t.Error("a plan of no tasks was drawn")
	}
}

func TestPlanRaw(t *testing.T) {
	o := planOptions{Seed: 7, Tasks: 4000, Rate: 50, Printers: 8, Kills: 3, MaxLen: time.Minute, RawPrinters: []int{0, 3, 5, 6}}
	p, err := newPlan(o)
	if err != nil {
		t.Fatal(err)
	}
	raw, cloud, per := 0, 0, map[int]int{}
	for i, tk := range p.Tasks {
		if !tk.Raw {
			if tk.Cloud {
				cloud++
			}
			continue
		}
		raw++
		per[tk.Printer]++
		if tk.Cloud || tk.No != fmt.Sprintf("R%06d", i) {
			t.Errorf("raw task %d: %+v", i, tk)
		}
	}
	if raw < 850 || raw > 1150 {
		t.Errorf("%d of 4000 tasks are raw jobs, want about a quarter", raw)
	}
	if cloud < 1300 || cloud > 1700 {
		t.Errorf("%d of 4000 are cloud jobs, want about half of the rest", cloud)
	}
	if len(per) != 4 || per[1]+per[2]+per[4]+per[7] != 0 {
		t.Errorf("raw jobs by printer %v, want the four raw printers only", per)
	}
	if _, err := newPlan(planOptions{Seed: 1, Tasks: 10, Rate: 1, Printers: 2, MaxLen: time.Minute, RawPrinters: []int{2}}); err == nil {
		t.Error("a raw printer out of range was planned")
	}
}
