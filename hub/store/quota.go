package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of the job quotas (Options.MaxJobsPerStore, MaxJobsPerTenant).
const (
	// DefaultMaxJobsPerStore bounds the job records one store keeps: a
	// busy store's 6,000 tickets a day over the default 30-day retention
	// stay under it, a runaway order system or agent does not fill the
	// hub for every other store.
	DefaultMaxJobsPerStore = 200_000
	// DefaultMaxJobsPerTenant bounds the job records of all a tenant's
	// stores, so that one chain cannot fill a hub others share.
	DefaultMaxJobsPerTenant = 2_000_000
	// countFresh is how long a store's or tenant's count of records is
	// used before it is counted again; between counts every job stored
	// through this node adds one, and records that leave at the end of
	// the retention are seen at the next count.
	countFresh = time.Minute
)

// ErrQuota means a submit would pass the store's or the tenant's bound on
// job records; errors.As gives the *QuotaError.
var ErrQuota = errors.New("job quota reached")

// QuotaError says which bound a submit would pass.
type QuotaError struct {
	// Tenant is true for the tenant's bound, false for the store's.
	Tenant bool
	// ID is the store's or the tenant's id.
	ID string
	// Jobs is the records counted, Max the bound.
	Jobs, Max int
}

// Error names the bound, the count and the config key that sets it.
func (e *QuotaError) Error() string {
	if e.Tenant {
		return fmt.Sprintf("tenant %s holds %d job records; max_jobs_per_tenant is %d", e.ID, e.Jobs, e.Max)
	}
	return fmt.Sprintf("store %s holds %d job records; max_jobs_per_store is %d", e.ID, e.Jobs, e.Max)
}

// Is makes errors.Is(err, ErrQuota) hold.
func (e *QuotaError) Is(target error) bool { return target == ErrQuota }

// quotas caches the record counts of stores and tenants.
type quotas struct {
	mu      sync.Mutex
	stores  map[string]*jobCount
	tenants map[string]*jobCount
}

// jobCount is a count of records and when it was made.
type jobCount struct {
	n  int
	at time.Time
}

// fresh returns m[id]'s count if it was made within countFresh of now.
func fresh(m map[string]*jobCount, id string, now time.Time) (int, bool) {
	c := m[id]
	if c == nil || now.Sub(c.at) >= countFresh || now.Before(c.at) {
		return 0, false
	}
	return c.n, true
}

// checkQuota refuses a new job of st when its store or its tenant holds
// as many job records as Options allow (*QuotaError). Records the agent
// reported (LAN, raw, manager jobs) count too.
func (s *Store) checkQuota(ctx context.Context, st StoreInfo, now time.Time) error {
	n, err := s.storeJobs(ctx, st.ID, now)
	if err != nil {
		return err
	}
	if n >= s.opts.MaxJobsPerStore {
		return &QuotaError{ID: st.ID, Jobs: n, Max: s.opts.MaxJobsPerStore}
	}
	n, err = s.tenantJobs(ctx, st.Tenant, now)
	if err != nil {
		return err
	}
	if n >= s.opts.MaxJobsPerTenant {
		return &QuotaError{Tenant: true, ID: st.Tenant, Jobs: n, Max: s.opts.MaxJobsPerTenant}
	}
	return nil
}

// storeJobs is the store's record count, counted at most once per
// countFresh.
func (s *Store) storeJobs(ctx context.Context, store string, now time.Time) (int, error) {
	s.quota.mu.Lock()
	n, ok := fresh(s.quota.stores, store, now)
	s.quota.mu.Unlock()
	if ok {
		return n, nil
	}
	n, err := s.countRecords(ctx, store)
	if err != nil {
		return 0, err
	}
	s.quota.mu.Lock()
	s.quota.stores[store] = &jobCount{n: n, at: now}
	s.quota.mu.Unlock()
	return n, nil
}

// tenantJobs is the sum of the tenant's stores' record counts, counted at
// most once per countFresh.
func (s *Store) tenantJobs(ctx context.Context, tenant string, now time.Time) (int, error) {
	s.quota.mu.Lock()
	n, ok := fresh(s.quota.tenants, tenant, now)
	s.quota.mu.Unlock()
	if ok {
		return n, nil
	}
	stores, err := s.Stores(ctx, tenant)
	if err != nil {
		return 0, err
	}
	n = 0
	for _, st := range stores {
		c, err := s.storeJobs(ctx, st.ID, now)
		if err != nil {
			return 0, err
		}
		n += c
	}
	s.quota.mu.Lock()
	s.quota.tenants[tenant] = &jobCount{n: n, at: now}
	s.quota.mu.Unlock()
	return n, nil
}

// countedJob adds a record just created to the cached counts.
func (s *Store) countedJob(st StoreInfo) {
	s.quota.mu.Lock()
	defer s.quota.mu.Unlock()
	if c := s.quota.stores[st.ID]; c != nil {
		c.n++
	}
	if c := s.quota.tenants[st.Tenant]; c != nil {
		c.n++
	}
}

// countRecords counts the store's keys of hub_tasks: an ephemeral
// consumer of the bucket's stream, filtered to the store's prefix, that
// would deliver the last message of each key (History 1 keeps one per
// key) says how many it has pending; it is deleted at once. The engine
// counts without handing the hub any key.
func (s *Store) countRecords(ctx context.Context, store string) (int, error) {
	str, err := s.js.Stream(ctx, "KV_hub_tasks")
	if err != nil {
		return 0, fmt.Errorf("store: count %s's jobs: %w", store, err)
	}
	c, err := str.CreateConsumer(ctx, jetstream.ConsumerConfig{
		FilterSubject: "$KV.hub_tasks." + store + ".>", DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy,
		AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: time.Minute, MemoryStorage: true,
	})
	if err != nil {
		return 0, fmt.Errorf("store: count %s's jobs: %w", store, err)
	}
	info := c.CachedInfo()
	if err := str.DeleteConsumer(ctx, info.Name); err != nil {
		s.log.Warn("store: delete a counting consumer (it ends by itself within a minute)", "err", err)
	}
	return int(info.NumPending), nil
}
