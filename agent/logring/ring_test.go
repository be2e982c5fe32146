package logring

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// put stores msg as an INFO record with no time, whose line is
// "level=INFO msg=" + msg (len 15+len(msg) for a plain msg).
func put(t *testing.T, r *Ring, level slog.Level, msg string) {
	t.Helper()
	if err := r.Handler(slog.LevelDebug).Handle(context.Background(), slog.NewRecord(time.Time{}, level, msg, 0)); err != nil {
		t.Fatal(err)
	}
}

func msgs(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		_, out[i], _ = strings.Cut(l, "msg=")
	}
	return out
}

// TestEvictByCount ensures the ring keeps the newest MaxLines lines, in
// order, as it wraps around more than once.
func TestEvictByCount(t *testing.T) {
	r := New(Options{MaxLines: 3})
	for i := range 8 {
		put(t, r, slog.LevelInfo, fmt.Sprint("m", i))
	}
	if got, want := fmt.Sprint(msgs(r.Lines())), "[m5 m6 m7]"; got != want {
		t.Fatalf("lines = %s, want %s", got, want)
	}
}

// TestEvictByBytes ensures the ring drops the oldest lines until the new
// one fits in MaxBytes.
func TestEvictByBytes(t *testing.T) {
	// Each line is "level=INFO msg=mN": 17 bytes. 50 bytes hold two.
	r := New(Options{MaxBytes: 50})
	for i := range 5 {
		put(t, r, slog.LevelInfo, fmt.Sprint("m", i))
	}
	if got, want := fmt.Sprint(msgs(r.Lines())), "[m3 m4]"; got != want {
		t.Fatalf("lines = %s, want %s", got, want)
	}
	put(t, r, slog.LevelInfo, strings.Repeat("x", 30)) // 45 bytes: room for nothing else
	if got := r.Lines(); len(got) != 1 || !strings.HasSuffix(got[0], "msg="+strings.Repeat("x", 30)) {
		t.Fatalf("lines = %q, want only the long line", got)
	}
}

// TestLongLineTruncated ensures one huge record is cut to MaxLineBytes, on
// a character boundary, instead of emptying the ring.
func TestLongLineTruncated(t *testing.T) {
	r := New(Options{MaxBytes: 1000, MaxLineBytes: 100})
	put(t, r, slog.LevelInfo, "keep")
	put(t, r, slog.LevelInfo, strings.Repeat("厨", 500))
	got := r.Lines()
	if len(got) != 2 || len(got[1]) > 100 || !strings.HasSuffix(got[1], "…[truncated]") || !utf8.ValidString(got[1]) {
		t.Fatalf("lines = %q, want keep and a cut line of at most 100 bytes", got)
	}
}

// TestConcurrentLogging ensures the ring stays consistent under concurrent
// writers and readers (run with -race).
func TestConcurrentLogging(t *testing.T) {
	r := New(Options{MaxLines: 100})
	log := slog.New(r.Handler(nil))
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 200 {
				log.Info("line", "w", w, "i", i)
				if i%50 == 0 {
					_ = r.Lines()
				}
			}
		})
	}
	wg.Wait()
	if n := len(r.Lines()); n != 100 {
		t.Fatalf("ring holds %d lines, want 100", n)
	}
}
