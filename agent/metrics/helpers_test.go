package metrics_test

import (
	"testing"

	"printgate/agent/metrics"
)

// gauge returns the value of the gauge or counter series name{labels...}
// (labels as name, value pairs), gathered from m's registry.
func gauge(t *testing.T, m *metrics.Metrics, name string, labels ...string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, s := range f.GetMetric() {
			have := map[string]string{}
			for _, lp := range s.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue series
				}
			}
			if s.Gauge != nil {
				return s.GetGauge().GetValue()
			}
			return s.GetCounter().GetValue()
		}
	}
	t.Fatalf("series %s%v not found", name, labels)
	return 0
}

func printerState(t *testing.T, m *metrics.Metrics, printer, state string) float64 {
	t.Helper()
	return gauge(t, m, "printgate_printer_state", "printer", printer, "state", state)
}

// hist is a gathered histogram: observation count, sum and cumulative
// bucket counts by upper bound.
type hist struct {
	count uint64
	sum   float64
	le    map[float64]uint64
}

func histogram(t *testing.T, m *metrics.Metrics, printer, confirmation string) hist {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "printgate_task_print_seconds" {
			continue
		}
		for _, s := range f.GetMetric() {
			have := map[string]string{}
			for _, lp := range s.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			if have["printer"] != printer || have["confirmation"] != confirmation {
				continue
			}
			h := hist{count: s.GetHistogram().GetSampleCount(), sum: s.GetHistogram().GetSampleSum(), le: map[float64]uint64{}}
			for _, b := range s.GetHistogram().GetBucket() {
				h.le[b.GetUpperBound()] = b.GetCumulativeCount()
			}
			return h
		}
	}
	t.Fatalf("histogram for %s/%s not found", printer, confirmation)
	return hist{}
}
