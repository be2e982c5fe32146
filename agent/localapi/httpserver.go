package localapi

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"net/http"
	"time"

	"printgate/internal/warnlimit"
)

// Default server timeouts (see ServerTimeouts).
const (
	// DefaultReadHeaderTimeout is how long a client has to send its request
	// headers: a LAN POS sends them in milliseconds, a client that trickles
	// them is holding a connection open.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout is how long a client has to send a whole request,
	// headers and body: enough for the largest ticket (~1.4 MiB of JSON)
	// over a poor shop Wi-Fi.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds the time from the end of the request
	// headers to the end of the answer. It is twice the read timeout so a
	// slow /metrics scrape or a submit that waits on a busy disk still
	// finishes. A streaming answer (such as a future server-sent event
	// stream on the manager page) must push its own deadline forward before
	// each write with http.ResponseController.SetWriteDeadline; this
	// default then still ends a stream whose client stopped reading.
	DefaultWriteTimeout = 60 * time.Second
	// DefaultIdleTimeout is how long a kept-alive connection may wait for
	// its next request: a POS that submits every few seconds reuses its
	// connection, one that left is forgotten.
	DefaultIdleTimeout = 120 * time.Second
	// DefaultMaxHeaderBytes caps request headers. The API and the manager
	// page need a few hundred bytes; net/http's 1 MiB default would let
	// each slow client hold that much memory.
	DefaultMaxHeaderBytes = 64 << 10
)

// ServerTimeouts bound how long one connection may hold the listener, so a
// device on the shop Wi-Fi that opens connections and then sends nothing,
// or reads nothing, cannot tie up the agent. A zero field takes its default
// (DefaultReadHeaderTimeout and so on); the fields mean what the http.Server
// fields of the same name mean.
type ServerTimeouts struct {
	// ReadHeaderTimeout bounds reading the request headers
	// (DefaultReadHeaderTimeout).
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading the whole request, body included
	// (DefaultReadTimeout).
	ReadTimeout time.Duration
	// WriteTimeout bounds the time from the end of the request headers to
	// the end of the answer (DefaultWriteTimeout).
	WriteTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a kept-alive
	// connection (DefaultIdleTimeout).
	IdleTimeout time.Duration
}

// NewServer returns the http.Server for the agent's local listener, serving
// h with the timeouts t (zero fields take the defaults) and request headers
// capped at DefaultMaxHeaderBytes. The server's own complaints go to logger:
// failed TLS handshakes at debug level (a browser refusing the self-signed
// certificate, a port scan, a client speaking plain HTTP to the TLS
// listener: routine on a shop LAN), everything else at warn. Nil logger
// discards them. Serve it with Serve, or with ServeTLS after setting
// TLSConfig (see package agent/tlscert).
func NewServer(h http.Handler, t ServerTimeouts, logger *slog.Logger) *http.Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: orDefault(t.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		ReadTimeout:       orDefault(t.ReadTimeout, DefaultReadTimeout),
		WriteTimeout:      orDefault(t.WriteTimeout, DefaultWriteTimeout),
		IdleTimeout:       orDefault(t.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    DefaultMaxHeaderBytes,
		ErrorLog:          log.New(serverLog{logger, &warnlimit.Limiter{Now: time.Now}}, "", 0),
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// serverLog turns the lines http.Server logs into slog records. A client
// provokes most of them (a panic in a handler aside): they are
// rate-limited.
type serverLog struct {
	log   *slog.Logger
	lines *warnlimit.Limiter
}

func (l serverLog) Write(p []byte) (int, error) {
	msg := string(bytes.TrimSpace(p))
	if bytes.Contains(p, []byte("TLS handshake error")) {
		l.log.LogAttrs(context.Background(), slog.LevelDebug, "http server", slog.String("err", msg))
		return len(p), nil
	}
	l.lines.Warn(l.log, "http server", slog.String("err", msg))
	return len(p), nil
}
