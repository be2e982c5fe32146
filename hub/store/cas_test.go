package store

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// TestCASNoLostUpdate ensures casJSON's read-modify-write loses no write:
// goroutines that increment one record at once leave it at the number of
// increments that returned success (a contended one may give up, saying
// so, but never counts twice or vanishes), the first creates the record,
// a change that writes nothing writes nothing, and a change's error comes
// back as it is.
func TestCASNoLostUpdate(t *testing.T) {
	s := open(t, t.TempDir())
	ctx := context.Background()
	type counter struct{ N int }
	inc := func(c *counter, _ bool) (bool, error) { c.N++; return true, nil }
	var ok atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				_, err := casJSON(ctx, s.cursors, "test_counter", inc)
				switch {
				case err == nil:
					ok.Add(1)
				case !errors.Is(err, errContended):
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	var c counter
	rev, err := getJSON(ctx, s.cursors, "test_counter", &c)
	if err != nil || c.N != int(ok.Load()) || ok.Load() == 0 {
		t.Fatalf("counter %d (%v) after %d successful increments", c.N, err, ok.Load())
	}
	if r, err := casJSON(ctx, s.cursors, "test_counter", func(*counter, bool) (bool, error) { return false, nil }); r != 0 || err != nil {
		t.Errorf("a change with nothing to write: revision %d, %v; want 0, nil", r, err)
	}
	if e, _ := s.cursors.Get(ctx, "test_counter"); e == nil || e.Revision() != rev {
		t.Errorf("a change with nothing to write wrote the record")
	}
	mine := errors.New("mine")
	if _, err := casJSON(ctx, s.cursors, "test_counter", func(*counter, bool) (bool, error) { return false, mine }); err != mine {
		t.Errorf("change's error came back as %v", err)
	}
}
