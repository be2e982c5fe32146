// Package hub is printgate's cloud side, `printgate-hub`: it composes the
// record on the embedded engine (hub/store), the agents' websocket
// (hub/agentlink) and the order API (hub/api) behind one HTTP listener,
// with /healthz, and the test API of PROTOCOL.md §7 (hub/testapi) when the
// config asks for it. docs/HUB.md describes what it does and what it does not
// do yet.
package hub

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"printgate/hub/agentlink"
	"printgate/hub/api"
	"printgate/hub/config"
	"printgate/hub/fleet"
	"printgate/hub/metrics"
	"printgate/hub/pairing"
	"printgate/hub/store"
	"printgate/hub/testapi"
	"printgate/hub/webhook"
	"printgate/internal/clock"
)

// Hub is one running hub node.
type Hub struct {
	cfg     *config.Config
	log     *slog.Logger
	st      *store.Store
	link    *agentlink.Server
	api     *api.API
	fleet   *fleet.Page
	ln      net.Listener
	srv     *http.Server
	start   time.Time
	clock   clock.Clock
	metrics *metrics.Metrics
	stop    chan struct{} // closed by Close: ends the expiry loop
	ended   chan struct{} // closed when the expiry loop has ended
	// stopHooks ends the webhook sender; hooksDone is closed once it has.
	stopHooks context.CancelFunc
	hooksDone chan struct{}
}

// expiryInterval is how often the hub looks for jobs past their deadline:
// an expired job is reported within this of its deadline.
const expiryInterval = 10 * time.Second

// OpenStore opens the record of cfg's data dir: for `printgate-hub run`
// and for the commands that add tenants, stores and keys (which refuse
// while a hub runs on the same data dir: store.ErrLocked).
func OpenStore(ctx context.Context, cfg *config.Config, log *slog.Logger) (*store.Store, error) {
	return store.Open(ctx, store.Options{
		Dir: cfg.DataDir, Node: cfg.Node, ClientListen: cfg.NATSListen,
		Retention: cfg.Retention, ExpireAfter: cfg.ExpireAfter, MaxBytes: cfg.MaxStoreMB << 20, Logger: log,
		MaxJobsPerStore: cfg.MaxJobsPerStore, MaxJobsPerTenant: cfg.MaxJobsPerTenant,
		Cluster: clusterOptions(cfg.Cluster),
	})
}

// clusterOptions is the engine's side of the [cluster] table (nil: one
// node).
func clusterOptions(c *config.Cluster) *store.ClusterOptions {
	if c == nil {
		return nil
	}
	return &store.ClusterOptions{Name: c.Name, Listen: c.Listen, Peers: c.Peers,
		TLSCert: c.TLSCert, TLSKey: c.TLSKey, TLSCA: c.TLSCA}
}

// Start opens the record and listens; Serve then serves until Close.
func Start(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Hub, error) {
	st, err := OpenStore(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	if n, err := st.ReleaseStale(ctx); err != nil {
		log.Warn("printgate-hub: release this node's stale owner records", "err", err)
	} else if n > 0 {
		log.Info("printgate-hub: released the owner records this node left when it stopped", "stores", n)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	var cert *tls.Certificate
	hosts := fleetHosts(ln, cfg.AllowedHosts, nil)
	if cfg.TLSCert != "" {
		c, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			ln.Close()
			st.Close()
			return nil, fmt.Errorf("TLS: %w", err)
		}
		cert = &c
		hosts = fleetHosts(ln, cfg.AllowedHosts, cert)
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12})
	}
	h := &Hub{cfg: cfg, log: log, st: st, ln: ln, start: time.Now(), clock: clock.RealClock(),
		stop: make(chan struct{}), ended: make(chan struct{})}
	mux := http.NewServeMux()
	h.metrics = metrics.New()
	mux.Handle("GET /metrics", h.metrics.Handler())
	linkOpts := agentlink.Options{Logger: log, PingInterval: cfg.PingInterval, Metrics: h.metrics}
	var ta *testapi.API
	if cfg.TestAPI {
		ta = testapi.New(st, log)
		linkOpts.Observer = ta
		mux.Handle("/api/", ta)
		mux.Handle("POST /oauth/device/{verb}", ta)
		log.Warn("printgate-hub: the test API is on (test_api = true): it hands device tokens to whoever asks; never on a production hub")
	}
	h.link = agentlink.New(st, linkOpts)
	if ta != nil {
		ta.Attach(h.link)
	}
	h.api = api.New(st, api.Options{Logger: log, Link: h.link, Metrics: h.metrics})
	flow := pairing.New(st, pairing.Options{Logger: log, Interval: cfg.PairingInterval})
	mux.Handle("POST "+pairing.Prefix+"/device/code", flow)
	mux.Handle("POST "+pairing.Prefix+"/token", flow)
	mux.Handle("GET "+agentlink.Path, h.link)
	mux.Handle("/v1/", h.api)
	h.fleet = fleet.New(st, fleet.Options{Link: h.link, Actions: h.api, TLS: cert != nil, Hosts: hosts, Logger: log})
	mux.Handle(fleet.Prefix+"/", h.fleet)
	mux.HandleFunc("GET /healthz", h.healthz)
	h.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go h.expire()
	hctx, stopHooks := context.WithCancel(context.Background())
	h.stopHooks, h.hooksDone = stopHooks, make(chan struct{})
	sender := webhook.New(st, webhook.Options{Logger: log, Metrics: h.metrics})
	go func() {
		defer close(h.hooksDone)
		sender.Run(hctx)
	}()
	return h, nil
}

// expire expires the jobs no agent acknowledged by their deadline, every
// expiryInterval, until Close.
func (h *Hub) expire() {
	defer close(h.ended)
	t := h.clock.NewTimer(expiryInterval)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C():
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		done, err := h.st.ExpireDue(ctx, h.clock.Now().UTC())
		cancel()
		for _, tk := range done {
			h.metrics.Expired(tk.Reason)
			h.log.Warn("printgate-hub: job expired unacknowledged", "store", tk.Store, "task_no", tk.TaskNo, "reason", tk.Reason)
		}
		if err != nil {
			h.log.Error("printgate-hub: expire jobs", "err", err)
		}
		t.Reset(expiryInterval)
	}
}

// Addr is the address the hub listens on.
func (h *Hub) Addr() net.Addr { return h.ln.Addr() }

// Serve serves HTTP until Close; it returns nil after Close.
func (h *Hub) Serve() error {
	err := h.srv.Serve(h.ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops taking requests, ends the agents' connections and stops the
// engine.
func (h *Hub) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := h.srv.Shutdown(ctx)
	close(h.stop)
	<-h.ended
	h.stopHooks()
	<-h.hooksDone
	h.link.Close()
	h.fleet.Close()
	h.st.Close()
	return err
}

// health is the answer of /healthz.
type health struct {
	Status string `json:"status"` // "ok" or "down"
	Reason string `json:"reason,omitempty"`
	Node   string `json:"node"`
	Agents int    `json:"agents"`
	Uptime string `json:"uptime"`
}

func (h *Hub) healthz(w http.ResponseWriter, r *http.Request) {
	v := health{Status: "ok", Node: h.st.Node(), Agents: h.link.Connected(), Uptime: time.Since(h.start).Round(time.Second).String()}
	status := http.StatusOK
	if err := h.st.Ready(); err != nil {
		v.Status, v.Reason, status = "down", err.Error()+": restart printgate-hub; its log says why the engine stopped", http.StatusServiceUnavailable
		if errors.Is(err, store.ErrNoClusterLeader) {
			// Restarting this node does not help: the sentence says what does.
			v.Reason = err.Error()
		}
	}
	body, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}
