package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Cluster defaults.
const (
	// MaxReplicas is how many copies of every bucket a cluster keeps: three
	// (the cluster's size when it has fewer nodes), so that any one node
	// may be lost without losing a write or the majority writes need.
	MaxReplicas = 3
	// DefaultClusterWait bounds how long Open waits for the cluster's
	// JetStream to elect its meta leader (a majority of the nodes up and
	// routed to one another).
	DefaultClusterWait = 60 * time.Second
)

// ClusterOptions makes the embedded engine one node of a JetStream
// cluster of hub nodes. Leadership, replication and membership are the
// engine's (RAFT); the hub only names the routes.
type ClusterOptions struct {
	// Name is the cluster's name, the same on every node. Required.
	Name string
	// Listen is this node's route address (host:port). Required.
	Listen string
	// Peers are the other nodes' route addresses (host:port); the engine
	// opens routes to these only.
	Peers []string
	// TLSCert, TLSKey and TLSCA are PEM files: with them every route is
	// TLS, both sides showing a certificate TLSCA signed.
	TLSCert, TLSKey, TLSCA string
	// Wait bounds how long Open waits for a meta leader (default
	// DefaultClusterWait).
	Wait time.Duration

	// token guards the loopback client port a clustered engine must open
	// (see clusterServerOptions); only this process knows it.
	token string
}

// replicas is how many copies each bucket keeps: one without a cluster,
// else the cluster's size up to MaxReplicas.
func (s *Store) replicas() int {
	if s.opts.Cluster == nil {
		return 1
	}
	return min(MaxReplicas, len(s.opts.Cluster.Peers)+1)
}

// clusterServerOptions adds the routes (and their TLS) to the engine's
// options; it does nothing without a cluster.
func (s *Store) clusterServerOptions(so *server.Options) error {
	c := s.opts.Cluster
	if c == nil {
		return nil
	}
	if c.Name == "" || c.Listen == "" || len(c.Peers) == 0 {
		return errors.New("store: a cluster needs its name, this node's route address and at least one peer")
	}
	host, port, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return fmt.Errorf("store: cluster listen %q: %w", c.Listen, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return fmt.Errorf("store: cluster listen %q: port: %w", c.Listen, err)
	}
	// The engine starts its routes only once its client listener is up
	// (nats-server's StartRouting waits for it), so a cluster node cannot
	// keep the engine portless as one node does: without [nats] listen it
	// listens on a random loopback port that only a random token, known
	// to this process alone, opens.
	cc := *c
	if so.DontListen {
		tok := make([]byte, 32)
		if _, err := rand.Read(tok); err != nil {
			return fmt.Errorf("store: engine token: %w", err)
		}
		cc.token = hex.EncodeToString(tok)
		so.DontListen = false
		so.Host, so.Port = "127.0.0.1", server.RANDOM_PORT
		so.Authorization = cc.token
	}
	s.opts.Cluster = &cc
	so.Cluster = server.ClusterOpts{Name: c.Name, Host: host, Port: p,
		// The nodes' route addresses are the configured ones: a node does
		// not tell clients of the others (the hub has no engine clients
		// but itself).
		NoAdvertise: true}
	for _, peer := range c.Peers {
		so.Routes = append(so.Routes, &url.URL{Scheme: "nats-route", Host: peer})
	}
	if c.TLSCert != "" {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: c.TLSCert, KeyFile: c.TLSKey, CaFile: c.TLSCA, Verify: true})
		if err != nil {
			return fmt.Errorf("store: cluster TLS: %w", err)
		}
		// A route is a client of its peer too: it checks the peer's
		// certificate against the same CA.
		tc.RootCAs = tc.ClientCAs
		so.Cluster.TLSConfig = tc
		so.Cluster.TLSTimeout = 5
	}
	return nil
}

// engineAuth is the option the hub's own engine connection needs: the
// token of a clustered engine's loopback port, else nothing.
func (s *Store) engineAuth() nats.Option {
	if c := s.opts.Cluster; c != nil && c.token != "" {
		return nats.Token(c.token)
	}
	return func(*nats.Options) error { return nil }
}

// clusterReady says, for /healthz, why a cluster node takes no writes:
// its cluster has no meta leader (fewer than a majority of the nodes up
// and routed), so nothing can be written anywhere.
func (s *Store) clusterReady() error {
	c := s.opts.Cluster
	if c == nil || s.metaLeader() != "" {
		return nil
	}
	return fmt.Errorf("%w: the hub cluster %s has no leader: fewer than %d of its %d nodes are up and reach one another; start the stopped nodes or check the routes between them",
		ErrNoClusterLeader, c.Name, (len(c.Peers)+1)/2+1, len(c.Peers)+1)
}

// ErrNoClusterLeader is Ready's error while the node's cluster has no
// meta leader: no write can be made on any node until a majority is up.
var ErrNoClusterLeader = errors.New("no cluster leader")

// waitMetaLeader waits, up to the cluster's Wait, until the engine's
// JetStream cluster has a meta leader: before that no bucket can be made
// or written. It names the peers no route reaches when it gives up.
func (s *Store) waitMetaLeader(ctx context.Context) error {
	c := s.opts.Cluster
	if c == nil {
		return nil
	}
	wait := c.Wait
	if wait <= 0 {
		wait = DefaultClusterWait
	}
	deadline := time.Now().Add(wait)
	for {
		if leader := s.metaLeader(); leader != "" {
			return nil
		}
		if time.Now().After(deadline) {
			return s.noLeaderError(wait)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("store: waiting for the cluster's meta leader: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// metaLeader is the name of the JetStream meta leader this node knows,
// or "" while there is none.
func (s *Store) metaLeader() string {
	jsz, err := s.ns.Jsz(&server.JSzOptions{})
	if err != nil || jsz.Meta == nil {
		return ""
	}
	return jsz.Meta.Leader
}

// noLeaderError says which peers no route reached and what to do.
func (s *Store) noLeaderError(wait time.Duration) error {
	c := s.opts.Cluster
	reached := map[string]bool{}
	if rz, err := s.ns.Routez(nil); err == nil {
		for _, r := range rz.Routes {
			reached[net.JoinHostPort(r.IP, strconv.Itoa(r.Port))] = true
		}
	}
	var missing []string
	for _, p := range c.Peers {
		if !reached[p] && !reached[resolved(p)] {
			missing = append(missing, p)
		}
	}
	need := (len(c.Peers)+1)/2 + 1
	if len(missing) == 0 {
		return fmt.Errorf("store: the cluster %s elected no JetStream meta leader within %v though every peer is routed; check that each node has a name of its own and the same cluster name", c.Name, wait)
	}
	return fmt.Errorf("store: the cluster %s elected no JetStream meta leader within %v: no route to %s (%d of %d nodes are needed up); start those nodes, or check their [cluster] listen addresses, the firewall and the route TLS files",
		c.Name, wait, strings.Join(missing, ", "), need, len(c.Peers)+1)
}

// resolved is addr with its host looked up, as routez shows a peer.
func resolved(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	ips, err := net.LookupHost(host)
	if err != nil || len(ips) == 0 {
		return addr
	}
	return net.JoinHostPort(ips[0], port)
}

// ClusterStatus is what this node sees of its cluster, for `printgate-hub
// status` and monitoring.
type ClusterStatus struct {
	// Name is the cluster's name; empty for one node.
	Name string `json:"name,omitempty"`
	// Node is this node's name.
	Node string `json:"node"`
	// MetaLeader is the node leading JetStream's metadata (empty: none;
	// no bucket can be created or changed then).
	MetaLeader string `json:"meta_leader,omitempty"`
	// Peers are the cluster's nodes as the meta leader knows them.
	Peers []PeerStatus `json:"peers,omitempty"`
	// Buckets are each bucket's leader and replicas.
	Buckets []BucketStatus `json:"buckets"`
}

// PeerStatus is one node of the cluster as seen by a leader.
type PeerStatus struct {
	Name    string `json:"name"`
	Current bool   `json:"current"`
	Offline bool   `json:"offline,omitempty"`
	// Lag is how many operations the node is behind its leader.
	Lag uint64 `json:"lag,omitempty"`
}

// BucketStatus is one bucket's stream: its leader and its copies.
type BucketStatus struct {
	Name     string       `json:"name"`
	Leader   string       `json:"leader,omitempty"`
	Replicas []PeerStatus `json:"replicas,omitempty"`
	Messages uint64       `json:"messages"`
}

// Cluster reports what this node sees of the cluster: the meta leader,
// the nodes, and each bucket's leader and lagging copies.
func (s *Store) Cluster(ctx context.Context) (ClusterStatus, error) {
	st := ClusterStatus{Node: s.opts.Node}
	if s.opts.Cluster != nil {
		st.Name = s.opts.Cluster.Name
	}
	if jsz, err := s.ns.Jsz(&server.JSzOptions{}); err == nil && jsz.Meta != nil {
		st.MetaLeader = jsz.Meta.Leader
		if st.MetaLeader != "" {
			st.Peers = append(st.Peers, PeerStatus{Name: st.MetaLeader, Current: true})
		}
		for _, r := range jsz.Meta.Replicas {
			st.Peers = append(st.Peers, peerStatus(r))
		}
		slices.SortFunc(st.Peers, func(a, b PeerStatus) int { return strings.Compare(a.Name, b.Name) })
	}
	names := s.js.StreamNames(ctx)
	for name := range names.Name() {
		str, err := s.js.Stream(ctx, name)
		if err != nil {
			return st, fmt.Errorf("store: stream %s: %w", name, err)
		}
		info, err := str.Info(ctx)
		if err != nil {
			return st, fmt.Errorf("store: stream %s: %w", name, err)
		}
		b := BucketStatus{Name: strings.TrimPrefix(name, "KV_"), Messages: info.State.Msgs}
		if info.Cluster != nil {
			b.Leader = info.Cluster.Leader
			for _, r := range info.Cluster.Replicas {
				b.Replicas = append(b.Replicas, PeerStatus{Name: r.Name, Current: r.Current, Offline: r.Offline, Lag: r.Lag})
			}
		}
		st.Buckets = append(st.Buckets, b)
	}
	if err := names.Err(); err != nil {
		return st, fmt.Errorf("store: list streams: %w", err)
	}
	slices.SortFunc(st.Buckets, func(a, b BucketStatus) int { return strings.Compare(a.Name, b.Name) })
	return st, nil
}

func peerStatus(r *server.PeerInfo) PeerStatus {
	return PeerStatus{Name: r.Name, Current: r.Current, Offline: r.Offline, Lag: r.Lag}
}

// createBucket creates or updates one bucket. In a cluster only the meta
// leader creates a bucket that does not exist yet, the other nodes wait
// for it: three nodes starting together and asking for the same new
// bucket at once were never answered (the bucket was made, the asks
// timed out). A bucket that exists is updated by whichever node starts,
// so a changed limit takes effect on the next start of any node. Each
// call gets a short deadline and is retried until the cluster's wait; a
// bucket's copies need as many nodes up as it has replicas, the first
// time it is made.
func (s *Store) createBucket(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	if s.opts.Cluster == nil {
		return s.js.CreateOrUpdateKeyValue(ctx, cfg)
	}
	wait := s.opts.Cluster.Wait
	if wait <= 0 {
		wait = DefaultClusterWait
	}
	deadline := time.Now().Add(wait)
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := s.js.Stream(cctx, "KV_"+cfg.Bucket)
		switch {
		case err == nil:
			_, err = s.js.CreateOrUpdateKeyValue(cctx, cfg)
		case errors.Is(err, jetstream.ErrStreamNotFound) && s.ns.JetStreamIsLeader():
			// The answer to a request making a replicated stream was seen
			// never to come on nats-server v2.15.3 (the stream was made,
			// its leader elected, the request timed out). Wait a moment,
			// then find the bucket made and update it (answered at once).
			nctx, ncancel := context.WithTimeout(cctx, time.Second)
			_, err = s.js.CreateOrUpdateKeyValue(nctx, cfg)
			ncancel()
			if errors.Is(err, context.DeadlineExceeded) {
				cancel()
				continue
			}
		case errors.Is(err, jetstream.ErrStreamNotFound):
			err = fmt.Errorf("the meta leader %s has not made bucket %s yet", s.metaLeader(), cfg.Bucket)
		}
		var kv jetstream.KeyValue
		if err == nil {
			kv, err = s.leaderReads(cctx, cfg.Bucket)
		}
		cancel()
		if err == nil {
			return kv, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return nil, fmt.Errorf("%w (the cluster needs %d nodes up to make its buckets the first time)", err, s.replicas())
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// leaderReads turns off direct gets on bucket's stream and binds it
// again. A KV bucket answers reads from any copy by default ("direct
// get"), and a copy a moment behind its leader answered a tenant written
// the moment before as not found; reads from the leader see every write
// acknowledged before them, which the hub's read-then-write steps rely
// on (a store added to the tenant just made, a job read after its
// submit on another node).
func (s *Store) leaderReads(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	str, err := s.js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return nil, err
	}
	// A stream just made has no leader for a moment, and an update sent
	// then was seen to go unanswered.
	for info := str.CachedInfo(); info.Cluster == nil || info.Cluster.Leader == ""; {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no leader for bucket %s yet: %w", bucket, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
		if info, err = str.Info(ctx); err != nil {
			return nil, err
		}
	}
	if cfg := str.CachedInfo().Config; cfg.AllowDirect {
		cfg.AllowDirect = false
		if _, err := s.js.UpdateStream(ctx, cfg); err != nil {
			return nil, err
		}
	}
	return s.js.KeyValue(ctx, bucket)
}
