package warnlimit

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestLimiterSummarises ensures a window logs PerMinute lines of a message,
// says the rest as one count once the window is over, logs again in the
// next, and counts each message apart.
func TestLimiterSummarises(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	w := Limiter{Now: func() time.Time { return now }}
	for i := 0; i < 40; i++ {
		w.Warn(log, "cloud frame refused", "i", i)
	}
	w.Warn(log, "another message")
	if n := strings.Count(buf.String(), "msg=\"cloud frame refused\""); n != PerMinute {
		t.Fatalf("40 lines in a minute logged %d, want %d:\n%s", n, PerMinute, buf.String())
	}
	if !strings.Contains(buf.String(), "another message") {
		t.Fatalf("a second message was held back by the first one's count:\n%s", buf.String())
	}
	now = now.Add(Window)
	w.Warn(log, "cloud frame refused", "i", 40)
	if !strings.Contains(buf.String(), "cloud frame refused (repeated; suppressed in the last minute)\" suppressed=35") {
		t.Errorf("no summary of the 35 held back once the minute was over:\n%s", buf.String())
	}
	if n := strings.Count(buf.String(), "level=WARN"); n != PerMinute+1+1+1 {
		t.Errorf("%d lines, want %d, the other message, one summary and the new line", n, PerMinute)
	}
}
