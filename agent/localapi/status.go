package localapi

import (
	"net/http"
	"printgate/agent/api"
)

// serveMetrics serves the Prometheus text to a local scraper without a
// token (the usual node-local Prometheus or a support tool on the PC) and to
// anyone else with it.
func (s *server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if !fromLoopback(r) && !s.authorize(w, r, " (or scrape /metrics from the agent's own machine)") {
		return
	}
	if s.metrics == nil {
		writeError(w, newError(http.StatusNotFound, api.CodeNotFound, "metrics are not enabled on this agent"))
		return
	}
	s.metrics.ServeHTTP(w, r)
}

// healthz answers without a token: it tells a supervisor the agent is up and
// whether the cloud link works, nothing about tasks. An agent whose core has
// stopped answers 503 with status "failed", so a probe that only reads the
// status code sees it too.
func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	h := s.b.Health()
	if h.Status == "" {
		h.Status = "ok"
	}
	code := http.StatusOK
	if h.Status == "failed" {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, h)
}

// printersBody is the answer of GET /api/v1/printers.
type printersBody struct {
	Printers []api.PrinterInfo `json:"printers"`
}

func (s *server) printers(w http.ResponseWriter, r *http.Request) {
	ps := s.b.Printers()
	if ps == nil {
		ps = []api.PrinterInfo{}
	}
	writeJSON(w, http.StatusOK, printersBody{Printers: ps})
}
