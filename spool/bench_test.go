package spool

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// commitMode is how a benchmark commits one accept.
type commitMode func(s *Spool, o *op) error

// viaUpdate is the naive baseline: one db.Update (one fsync) per task.
func viaUpdate(s *Spool, o *op) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if err := o.prepare(tx); err != nil {
			return err
		}
		return o.apply(tx)
	})
}

// viaBoltBatch uses bbolt's own Batch, which waits up to MaxBatchDelay
// (10 ms) for a batch to fill.
func viaBoltBatch(s *Spool, o *op) error {
	return s.db.Batch(func(tx *bolt.Tx) error {
		if err := o.prepare(tx); err != nil {
			return err
		}
		return o.apply(tx)
	})
}

// viaLoop is what Accept does: the spool's own commit loop.
func viaLoop(s *Spool, o *op) error { return s.submit(o) }

// BenchmarkAccept measures durable accepts (fsync on) with N concurrent
// submitters: batch is the spool's commit loop (what Accept uses), update is
// one db.Update per task, boltbatch is bbolt's Batch. It reports accepts/s and
// the p50/p99 latency each submitter saw.
func BenchmarkAccept(b *testing.B) {
	modes := []struct {
		name string
		run  commitMode
	}{{"batch", viaLoop}, {"update", viaUpdate}, {"boltbatch", viaBoltBatch}}
	body := make([]byte, 300)
	for _, m := range modes {
		for _, n := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("%s-%d", m.name, n), func(b *testing.B) {
				s, _ := openTest(b, Options{Now: time.Now})
				var next atomic.Int64
				lat := make([][]time.Duration, n)
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for g := 0; g < n; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := next.Add(1)
							if i > int64(b.N) {
								return
							}
							rec, err := s.newRecord(NewTask{TaskNo: fmt.Sprintf("BENCH-%09d_K_v1", i), Printer: "kitchen", Payload: body})
							if err != nil {
								b.Error(err)
								return
							}
							o, _ := s.acceptOp(rec)
							t0 := time.Now()
							if err := m.run(s, o); err != nil && !errors.Is(err, errSkip) {
								b.Error(err)
								return
							}
							lat[g] = append(lat[g], time.Since(t0))
						}
					}()
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				all := slices.Concat(lat...)
				slices.Sort(all)
				if len(all) > 0 {
					b.ReportMetric(float64(b.N)/elapsed.Seconds(), "accepts/s")
					b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
					b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
				}
			})
		}
	}
}
