package localapi

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"printgate/agent/api"
	"printgate/agent/logring"
)

// Limits of GET /api/v1/logs.
const (
	// DefaultLogLines is how many recent lines GET /api/v1/logs sends when
	// the request names no lines.
	DefaultLogLines = 100
	// MaxLogLines is the most recent lines one request may ask for; the
	// ring keeps about two thousand, and a phone on the shop Wi-Fi has no
	// use for more.
	MaxLogLines = 1000
)

// logLevels are the level names GET /api/v1/logs accepts, as the config's
// [log] level spells them.
var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug,
	"info":  slog.LevelInfo,
	"warn":  slog.LevelWarn,
	"error": slog.LevelError,
}

// logs serves GET /api/v1/logs: the agent's recent log lines, redacted,
// as text, one line per log line, and with follow=1 the new ones as they
// are logged (PROTOCOL.md §3). The tail itself (filters, rate limit, the
// maximum duration of a follow) is logring's, the same support reads
// through the cloud link.
func (s *server) logs(w http.ResponseWriter, r *http.Request) {
	if s.opts.Tail == nil {
		writeError(w, newError(http.StatusNotFound, api.CodeNotFound, "this agent does not serve its log over the API; read the log file in its data dir"))
		return
	}
	o, e := parseLogsQuery(r.URL.Query())
	if e != nil {
		s.fail(w, r, e)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	if o.Follow {
		// The client learns at once that the tail is open, before any
		// new line is logged.
		flush(rc)
	}
	var buf bytes.Buffer
	send := func(lines []string) error {
		if err := r.Context().Err(); err != nil {
			return err
		}
		buf.Reset()
		for _, l := range lines {
			buf.WriteString(strings.TrimRight(l, "\r\n"))
			buf.WriteByte('\n')
		}
		// The listener's WriteTimeout counts from the request: a follow
		// outlives it, so each write gets its own deadline. A client
		// that stops reading still loses the stream after that long.
		if err := rc.SetWriteDeadline(time.Now().Add(DefaultWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
		if o.Follow {
			flush(rc)
		}
		return nil
	}
	if err := s.opts.Tail(r.Context(), o, send); err != nil && r.Context().Err() == nil {
		// The status is sent; all that is left is to say why the stream
		// ended early.
		s.log.LogAttrs(r.Context(), slog.LevelDebug, "log tail over the API ended", slog.Any("err", err))
	}
}

// flush pushes what is written so far to the client; a writer that cannot
// flush (a test recorder) keeps it until the end.
func flush(rc *http.ResponseController) {
	_ = rc.Flush()
}

// parseLogsQuery reads level, q, lines and follow. Unknown and repeated
// parameters are refused, as on the task list, so a typo ("levle") is not
// silently ignored.
func parseLogsQuery(q url.Values) (logring.TailOptions, *apiError) {
	o := logring.TailOptions{Level: slog.LevelInfo, Lines: DefaultLogLines}
	for k, vs := range q {
		switch k {
		case "level", "q", "lines", "follow":
		default:
			return o, newError(http.StatusBadRequest, api.CodeBadQuery, "unknown query parameter %q; use level, q, lines and follow", k)
		}
		if len(vs) > 1 {
			return o, newError(http.StatusBadRequest, api.CodeBadQuery, "query parameter %q is given %d times; give it once", k, len(vs))
		}
	}
	if v := q.Get("level"); v != "" {
		l, ok := logLevels[strings.ToLower(v)]
		if !ok {
			return o, newError(http.StatusBadRequest, api.CodeBadQuery, "level %q is not one of debug, info, warn, error", v)
		}
		o.Level = l
	}
	o.Contains = q.Get("q")
	if v := q.Get("lines"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxLogLines {
			return o, newError(http.StatusBadRequest, api.CodeBadQuery, "lines %q must be a whole number from 0 to %d", v, MaxLogLines)
		}
		o.Lines = n
	}
	switch v := strings.ToLower(q.Get("follow")); v {
	case "", "0", "false":
	case "1", "true":
		o.Follow = true
	default:
		return o, newError(http.StatusBadRequest, api.CodeBadQuery, "follow %q must be 1 or true (or 0 or false)", q.Get("follow"))
	}
	return o, nil
}
