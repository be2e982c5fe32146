package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"printgate/internal/warnlimit"
)

// Defaults of Options.
const (
	// DefaultRetention is how long a job, its state and its task_no dedupe
	// are kept after their last write: a month, so that an order system
	// resending a task_no weeks later is still answered duplicate.
	DefaultRetention = 30 * 24 * time.Hour
	// DefaultMaxBytes bounds the jobs on disk (hub_tasks: a body stays
	// until the agent acknowledges it); the other buckets are bounded to a
	// fraction of it.
	DefaultMaxBytes = 8 << 30
	// DefaultExpireAfter is how long a job without a timeout waits for an
	// agent: a day, the longest timeout a job may ask for.
	DefaultExpireAfter = 24 * time.Hour
	// maxValueBytes is the largest value a bucket takes: a job record with
	// a 1 MiB payload is 1.34 MiB as base64 in JSON, plus its envelope.
	maxValueBytes = 3 << 20
	// maxPayload is the engine's largest message, above maxValueBytes.
	maxPayload = 4 << 20
	// startTimeout bounds how long the engine may take to start.
	startTimeout = 30 * time.Second
)

// Options configures Open.
type Options struct {
	// Dir is the data dir; the engine's files go to Dir/jetstream. Required.
	Dir string
	// Node names this hub node in owner records and the engine (default:
	// the host name).
	Node string
	// ClientListen, when set ("127.0.0.1:4222"), opens the engine's NATS
	// client port. Empty (the default): the engine listens on no port and
	// only this process reaches it.
	ClientListen string
	// Retention is how long jobs, their states and their dedupe are kept
	// after their last write (default DefaultRetention).
	Retention time.Duration
	// MaxBytes bounds the jobs on disk (default DefaultMaxBytes); a
	// submit past it is refused with ErrFull, nothing stored is dropped.
	MaxBytes int64
	// ExpireAfter is how long a job without a timeout waits for an
	// agent's acknowledgement before it expires (default
	// DefaultExpireAfter).
	ExpireAfter time.Duration
	// MaxJobsPerStore and MaxJobsPerTenant bound the job records of one
	// store and of all a tenant's stores (default DefaultMaxJobsPerStore,
	// DefaultMaxJobsPerTenant): a submit past either is refused with a
	// *QuotaError (ErrQuota); nothing stored is dropped.
	MaxJobsPerStore, MaxJobsPerTenant int
	// Logger receives the store's own lines (default slog.Default()).
	Logger *slog.Logger
	// Cluster, when set, makes the engine one node of a JetStream
	// cluster (routes, buckets at MaxReplicas copies); nil runs one node.
	Cluster *ClusterOptions
}

// Store is the hub's record on its embedded engine. Its methods are safe
// for concurrent use.
type Store struct {
	opts Options
	log  *slog.Logger
	lock *dirLock
	ns   *server.Server
	nc   *nats.Conn
	js   jetstream.JetStream

	tasks, pending, owners              jetstream.KeyValue
	tenants, stores, apikeys, devicesKV jetstream.KeyValue
	pairings, commands                  jetstream.KeyValue
	webhooks, deliveries, dead          jetstream.KeyValue
	cursors                             jetstream.KeyValue

	// kick wakes the webhook sender when a delivery is queued.
	kick chan struct{}
	// hookCache holds the tenants' endpoint lists for the state changes'
	// outboxes and the fan-out.
	hookCache hookCache
	// hookWarn rate-limits the lines of the webhook fan-out's failures.
	hookWarn warnlimit.Limiter
	// quota caches the record counts of stores and tenants.
	quota quotas
}

// Open locks the data dir, starts the embedded engine (file store,
// sync_always) and creates or updates the buckets. A data dir another
// process has open is refused with ErrLocked.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if opts.Dir == "" {
		return nil, errors.New("store: no data dir")
	}
	if opts.Node == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "hub"
		}
		opts.Node = h
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.ExpireAfter <= 0 {
		opts.ExpireAfter = DefaultExpireAfter
	}
	if opts.MaxJobsPerStore <= 0 {
		opts.MaxJobsPerStore = DefaultMaxJobsPerStore
	}
	if opts.MaxJobsPerTenant <= 0 {
		opts.MaxJobsPerTenant = DefaultMaxJobsPerTenant
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: data dir: %w", err)
	}
	lock, err := lockDir(filepath.Join(opts.Dir, "hub.lock"))
	if err != nil {
		return nil, err
	}
	s := &Store{opts: opts, log: opts.Logger, lock: lock, kick: make(chan struct{}, 1),
		quota: quotas{stores: map[string]*jobCount{}, tenants: map[string]*jobCount{}}}
	s.hookWarn.Now = time.Now
	if err := s.start(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// start runs the engine, connects in-process and makes the buckets.
func (s *Store) start(ctx context.Context) error {
	so := &server.Options{
		ServerName: s.opts.Node,
		JetStream:  true,
		// The engine keeps its files in StoreDir/jetstream.
		StoreDir: s.opts.Dir,
		// Every bucket is a file store; memory storage is not used.
		JetStreamMaxMemory: 64 << 20,
		// Acknowledge a write only once it is fsynced: by default JetStream
		// flushes every two minutes and acknowledges before, and acked
		// writes were lost that way (nats-io/nats-server #7564).
		SyncAlways: true,
		MaxPayload: maxPayload,
		NoSigs:     true,
		NoLog:      true,
	}
	if s.opts.ClientListen == "" {
		so.DontListen = true
	} else {
		host, port, err := net.SplitHostPort(s.opts.ClientListen)
		if err != nil {
			return fmt.Errorf("store: engine client listen %q: %w", s.opts.ClientListen, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return fmt.Errorf("store: engine client listen %q: port: %w", s.opts.ClientListen, err)
		}
		so.Host, so.Port = host, p
	}
	if err := s.clusterServerOptions(so); err != nil {
		return err
	}
	ns, err := server.NewServer(so)
	if err != nil {
		return fmt.Errorf("store: engine: %w", err)
	}
	s.ns = ns
	ns.Start()
	if !ns.ReadyForConnections(startTimeout) {
		return fmt.Errorf("store: engine not ready within %v", startTimeout)
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns), nats.Name("printgate-hub "+s.opts.Node), nats.MaxReconnects(-1), s.engineAuth())
	if err != nil {
		return fmt.Errorf("store: connect to the engine: %w", err)
	}
	s.nc = nc
	// A call without a deadline of its own (the buckets made at start)
	// waits up to apiTimeout, not the client's 5 s: on a slow or busy disk
	// creating a dozen file-backed buckets with every write synced took
	// longer, and the hub refused to start.
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(apiTimeout))
	if err != nil {
		return fmt.Errorf("store: jetstream: %w", err)
	}
	s.js = js
	if err := s.waitMetaLeader(ctx); err != nil {
		return err
	}
	return s.buckets(ctx)
}

// buckets creates or updates every bucket with its limits.
func (s *Store) buckets(ctx context.Context) error {
	ret, max := s.opts.Retention, s.opts.MaxBytes
	small := max / 8
	dir := int64(256 << 20)
	for _, b := range []struct {
		kv  *jetstream.KeyValue
		cfg jetstream.KeyValueConfig
	}{
		{&s.tasks, jetstream.KeyValueConfig{Bucket: "hub_tasks", Description: "jobs by store.task_no: state, timeline, body until acked; Create is the task_no dedupe",
			TTL: ret, MaxBytes: max, MaxValueSize: maxValueBytes}},
		{&s.pending, jetstream.KeyValueConfig{Bucket: "hub_pending", Description: "jobs no agent has acknowledged, by store.task_no",
			TTL: ret, MaxBytes: small, MaxValueSize: 4 << 10, LimitMarkerTTL: pendingMarkerTTL}},
		{&s.owners, jetstream.KeyValueConfig{Bucket: "hub_owners", Description: "store -> node and connection holding its agent",
			MaxBytes: dir, MaxValueSize: 4 << 10}},
		{&s.tenants, jetstream.KeyValueConfig{Bucket: "hub_tenants", MaxBytes: dir, MaxValueSize: 16 << 10}},
		{&s.stores, jetstream.KeyValueConfig{Bucket: "hub_stores", MaxBytes: dir, MaxValueSize: 16 << 10}},
		{&s.apikeys, jetstream.KeyValueConfig{Bucket: "hub_apikeys", MaxBytes: dir, MaxValueSize: 4 << 10}},
		{&s.devicesKV, jetstream.KeyValueConfig{Bucket: "hub_devices", MaxBytes: dir, MaxValueSize: 4 << 10}},
		{&s.commands, jetstream.KeyValueConfig{Bucket: "hub_commands", Description: "reprint and cancel commands by store.id, with the agent's result",
			TTL: 7 * 24 * time.Hour, MaxBytes: dir, MaxValueSize: 16 << 10}},
		{&s.pairings, jetstream.KeyValueConfig{Bucket: "hub_pairings", Description: "device authorizations of RFC 8628, by device code hash and user code",
			TTL: time.Hour, MaxBytes: dir, MaxValueSize: 4 << 10}},
		{&s.webhooks, jetstream.KeyValueConfig{Bucket: "hub_webhooks", Description: "webhook endpoints by tenant.id, with their signing secrets",
			MaxBytes: dir, MaxValueSize: 4 << 10}},
		{&s.deliveries, jetstream.KeyValueConfig{Bucket: "hub_deliveries", Description: "webhook messages not yet delivered, by endpoint.message id",
			TTL: deliveryTTL, MaxBytes: small, MaxValueSize: 64 << 10, LimitMarkerTTL: pendingMarkerTTL}},
		{&s.dead, jetstream.KeyValueConfig{Bucket: "hub_dead", Description: "webhook messages given up on, by endpoint.message id, until replayed",
			TTL: ret, MaxBytes: small, MaxValueSize: 64 << 10, LimitMarkerTTL: pendingMarkerTTL}},
		{&s.cursors, jetstream.KeyValueConfig{Bucket: "hub_cursors", Description: "where this hub's scans of its streams stopped: the webhook fan-out's in hub_tasks",
			MaxBytes: 1 << 20, MaxValueSize: 1 << 10}},
	} {
		b.cfg.Storage = jetstream.FileStorage
		b.cfg.History = 1
		b.cfg.Replicas = s.replicas()
		kv, err := s.createBucket(ctx, b.cfg)
		if err != nil {
			return fmt.Errorf("store: bucket %s: %w", b.cfg.Bucket, err)
		}
		*b.kv = kv
	}
	return nil
}

// apiTimeout bounds an engine call made without a deadline of its own.
const apiTimeout = 30 * time.Second

// Node is this hub node's name.
func (s *Store) Node() string { return s.opts.Node }

// Ready reports whether the engine takes writes now, for /healthz.
func (s *Store) Ready() error {
	if s.nc == nil || !s.nc.IsConnected() {
		return errors.New("the hub is not connected to its embedded engine")
	}
	if !s.ns.JetStreamEnabled() {
		return errors.New("the embedded engine has no JetStream")
	}
	return s.clusterReady()
}

// Close stops the engine (flushing what it holds) and releases the data
// dir. It is safe to call more than once.
func (s *Store) Close() error {
	if s.nc != nil {
		s.nc.Close()
		s.nc = nil
	}
	if s.ns != nil {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
		s.ns = nil
	}
	if s.lock != nil {
		s.lock.release()
		s.lock = nil
	}
	return nil
}
