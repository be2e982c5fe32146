package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"gopkg.in/natefinch/lumberjack.v2"

	"printgate/agent/config"
	"printgate/agent/logring"
)

// NewLogger builds the agent's logger from the [log] config: JSON lines to a
// size-rotated file in the data dir (what support reads), readable text to
// console (what a person running `printgate run` sees), and, when ring is
// not nil, the in-memory ring the remote log tail reads. Secrets are
// redacted on every branch (logring.ReplaceAttr): tokens, PINs and
// Authorization headers never reach a file, a console or support. The
// returned closer flushes and closes the file.
func NewLogger(c config.Log, console io.Writer, ring *logring.Ring) (*slog.Logger, io.Closer, error) {
	level := c.Level
	handlers := []slog.Handler{}
	var closer io.Closer = nopCloser{}
	if c.File != "" {
		if err := os.MkdirAll(filepath.Dir(c.File), 0o750); err != nil {
			return nil, nil, err
		}
		lj := &lumberjack.Logger{Filename: c.File, MaxSize: orInt(c.MaxSizeMB, 10), MaxBackups: orInt(c.MaxBackups, 5), Compress: true}
		handlers = append(handlers, slog.NewJSONHandler(lj, &slog.HandlerOptions{Level: level, ReplaceAttr: logring.ReplaceAttr}))
		closer = lj
	}
	if console != nil {
		handlers = append(handlers, slog.NewTextHandler(console, &slog.HandlerOptions{Level: level, ReplaceAttr: logring.ReplaceAttr}))
	}
	if ring != nil {
		handlers = append(handlers, ring.Handler(level))
	}
	return slog.New(fanout(handlers)), closer, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

func orInt(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// fanout sends every record to each handler that wants it.
type fanout []slog.Handler

func (f fanout) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range f {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (f fanout) Handle(ctx context.Context, r slog.Record) error {
	var errs []error
	for _, h := range f {
		if h.Enabled(ctx, r.Level) {
			errs = append(errs, h.Handle(ctx, r.Clone()))
		}
	}
	return errors.Join(errs...)
}

func (f fanout) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithAttrs(attrs)
	}
	return out
}

func (f fanout) WithGroup(name string) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithGroup(name)
	}
	return out
}
