package agent

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"printgate/drivers/printertest"
)

// BenchmarkAgentOverhead measures the agent's own latency: from the Submit
// call (validation, fsync'd accept) to the job's bytes at the printer (the
// emulator cutting the ticket), at a paced 200 tasks/s spread over 8
// emulated Epson printers, on the real clock. It reports p50 and p99 in ms.
// Run with a fixed count: go test -run '^$' -bench AgentOverhead -benchtime 2000x ./agent/
func BenchmarkAgentOverhead(b *testing.B) {
	const printers, rate = 8, 200
	var mu sync.Mutex
	arrived := map[string]time.Time{}
	done := make(chan struct{}, 1)
	var specs []printerSpec
	for i := 0; i < printers; i++ {
		specs = append(specs, printerSpec{name: fmt.Sprintf("p%d", i), model: printertest.ModelEpson, onTicket: func(tk printertest.Ticket) {
			for _, l := range tk.Lines {
				if f := strings.Fields(l); len(f) == 2 && f[0] == "TICKET" {
					mu.Lock()
					arrived[f[1]] = tk.At
					mu.Unlock()
				}
			}
			select {
			case done <- struct{}{}:
			default:
			}
		}})
	}
	h := newRealHarness(b, specs, "")
	h.limit = 5 * time.Minute
	for i := 0; i < printers; i++ {
		h.waitPrinter(fmt.Sprintf("p%d", i), "READY")
	}
	submitted := make(map[string]time.Time, b.N)
	tick := time.NewTicker(time.Second / rate)
	defer tick.Stop()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		<-tick.C
		no := fmt.Sprintf("B%07d_K_v1", i)
		start := time.Now()
		h.submit(no, fmt.Sprintf("p%d", i%printers))
		submitted[no] = start
	}
	for {
		mu.Lock()
		n := len(arrived)
		mu.Unlock()
		if n >= b.N {
			break
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			b.Fatalf("only %d of %d tickets arrived", n, b.N)
		}
	}
	b.StopTimer()
	lat := make([]time.Duration, 0, b.N)
	mu.Lock()
	for no, at := range arrived {
		lat = append(lat, at.Sub(submitted[no]))
	}
	mu.Unlock()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
}
