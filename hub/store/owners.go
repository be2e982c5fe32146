package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Owner says which hub node and connection hold a store's agent.
type Owner struct {
	Node    string    `json:"node"`
	Conn    string    `json:"conn"`
	AgentID string    `json:"agent_id"`
	Since   time.Time `json:"since"`
}

// Claim makes this node's connection conn the owner of store: a newer
// connection replaces an older one wherever it is. It writes by
// compare-and-set on the revision read, so of two claims racing each
// sees the other's record or replaces it knowingly; it returns the
// previous owner (zero if none) and the revision of the claim, for
// Release.
func (s *Store) Claim(ctx context.Context, store, conn, agentID string, now time.Time) (prev Owner, rev uint64, err error) {
	o := Owner{Node: s.opts.Node, Conn: conn, AgentID: agentID, Since: now}
	rev, err = casJSON(ctx, s.owners, store, func(cur *Owner, _ bool) (bool, error) {
		prev, *cur = *cur, o
		return true, nil
	})
	if err != nil {
		return Owner{}, 0, fmt.Errorf("store: claim %s: %w", store, err)
	}
	return prev, rev, nil
}

// Release removes the owner record of store if it is still the claim of
// revision rev; a newer claim (another connection, another node) stays.
// It reports whether the record was removed.
func (s *Store) Release(ctx context.Context, store string, rev uint64) (bool, error) {
	err := s.owners.Delete(ctx, store, jetstream.LastRevision(rev))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		return false, nil
	}
	return false, fmt.Errorf("store: release %s: %w", store, kvErr(err))
}

// OwnerOf returns the owner of store, or ErrNotFound when no connection
// holds it.
func (s *Store) OwnerOf(ctx context.Context, store string) (Owner, error) {
	var o Owner
	_, err := getJSON(ctx, s.owners, store, &o)
	return o, err
}

// jobsSubject is the core (not stored) subject a store's new jobs are
// announced on; the node owning the store's connection listens on it.
func jobsSubject(store string) string { return "hub.jobs." + store }

// notifyJob announces a stored job to whoever owns its store's connection.
// It is a hint, not the record: a connection also loads the pending jobs
// when it starts, so a lost announcement delays nothing past a reconnect.
func (s *Store) notifyJob(store, taskNo string) {
	if err := s.nc.Publish(jobsSubject(store), []byte(taskNo)); err != nil {
		s.log.Warn("hub: announce a job", "store", store, "task_no", taskNo, "err", err)
	}
}

// WatchJobs calls fn with the task_no of each job stored for store from
// now on (on any node), until the returned stop is called. fn runs on the
// engine's delivery goroutine: it must not block.
func (s *Store) WatchJobs(store string, fn func(taskNo string)) (stop func(), err error) {
	sub, err := s.nc.Subscribe(jobsSubject(store), func(m *nats.Msg) { fn(string(m.Data)) })
	if err != nil {
		return nil, fmt.Errorf("store: watch jobs of %s: %w", store, err)
	}
	// Once Flush returns the engine has the subscription: a job stored
	// after WatchJobs returns is announced to fn.
	if err := s.nc.Flush(); err != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("store: watch jobs of %s: %w", store, err)
	}
	return func() { sub.Unsubscribe() }, nil
}

// WatchOwners calls fn with every owner record written from now on, with
// its revision, on any node, until stop is called: one watch per node,
// not per store. fn runs on the watch's goroutine and must not block.
func (s *Store) WatchOwners(fn func(store string, o Owner, rev uint64)) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := s.owners.WatchAll(ctx, jetstream.UpdatesOnly(), jetstream.IgnoreDeletes())
	if err != nil {
		cancel()
		return nil, fmt.Errorf("store: watch owners: %w", err)
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
				var o Owner
				if json.Unmarshal(e.Value(), &o) == nil {
					fn(e.Key(), o, e.Revision())
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

// ReleaseStale removes the owner records this node left when it last
// stopped without releasing them (killed, or its connections cut by a
// crash): a node that starts holds no connection yet. Records of other
// nodes stay. Node names must be unique in a cluster for this. It returns
// how many it removed.
func (s *Store) ReleaseStale(ctx context.Context) (int, error) {
	l, err := s.owners.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("store: list owners: %w", err)
	}
	var keys []string
	for k := range l.Keys() {
		keys = append(keys, k)
	}
	l.Stop()
	n := 0
	for _, k := range keys {
		var o Owner
		rev, err := getJSON(ctx, s.owners, k, &o)
		if err != nil || o.Node != s.opts.Node {
			continue
		}
		if ok, err := s.Release(ctx, k, rev); err != nil {
			return n, err
		} else if ok {
			n++
		}
	}
	return n, nil
}
