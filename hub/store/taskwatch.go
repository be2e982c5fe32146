package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// WatchTasks calls fn with the store and task_no of every job record
// written from now on, on any node, until stop is called: one watch per
// caller over the whole bucket, keys only (the engine sends no values), so
// a reader can keep its own view of some jobs and read again only those
// that changed (the fleet page's jobs that need someone). fn runs on the
// watch's goroutine and must not block.
func (s *Store) WatchTasks(fn func(store, taskNo string)) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := s.tasks.WatchAll(ctx, jetstream.UpdatesOnly(), jetstream.IgnoreDeletes(), jetstream.MetaOnly())
	if err != nil {
		cancel()
		return nil, fmt.Errorf("store: watch tasks: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil {
					continue
				}
				if st, _, ok := strings.Cut(e.Key(), "."); ok {
					fn(st, taskNoOfKey(e.Key()))
				}
			}
		}
	}()
	return func() {
		w.Stop()
		cancel()
		<-done
	}, nil
}
