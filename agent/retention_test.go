package agent

import (
	"testing"
	"time"
)

// TestPruneEvery ensures retention runs hourly for long retentions and
// within a quarter of a short one, never more often than once a minute.
func TestPruneEvery(t *testing.T) {
	for _, tc := range []struct{ retention, want time.Duration }{
		{7 * 24 * time.Hour, time.Hour},
		{4 * time.Hour, time.Hour},
		{2 * time.Hour, 30 * time.Minute},
		{10 * time.Minute, 150 * time.Second},
		{time.Minute, time.Minute},
		{0, time.Minute},
	} {
		if got := PruneEvery(tc.retention); got != tc.want {
			t.Errorf("PruneEvery(%v) = %v, want %v", tc.retention, got, tc.want)
		}
	}
}
