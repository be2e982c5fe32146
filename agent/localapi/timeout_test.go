package localapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"printgate/agent/localapi"
)

// TestTimeoutBounds ensures a task's timeout is taken from 1s to 24h
// inclusive, reaches the backend as sent, and anything outside (however it
// is written) is refused with 400 bad_timeout whose message names both
// bounds, and nothing is stored.
func TestTimeoutBounds(t *testing.T) {
	f := newFake()
	c := newAPI(t, f, localapi.Options{})
	for i, tc := range []struct {
		timeout string
		ok      bool
		want    time.Duration
	}{
		{"1ns", false, 0},
		{"999ms", false, 0},
		{"999999999ns", false, 0},
		{"1s", true, time.Second},
		{"1000ms", true, time.Second},
		{"90s", true, 90 * time.Second},
		{"24h", true, 24 * time.Hour},
		{"1440m", true, 24 * time.Hour},
		{"24h0m0.000000001s", false, 0},
		{"24h1s", false, 0},
		{"25h", false, 0},
		{"8760h", false, 0},
	} {
		no := "T" + string(rune('A'+i)) + "_v1"
		body := submitBody(map[string]any{"task_no": no, "printer": "kitchen", "payload": "aGVsbG8=", "timeout": tc.timeout})
		a := c.do("POST", "/api/v1/tasks", body)
		if tc.ok {
			wantStatus(t, a, http.StatusAccepted, "")
			st := f.tasks[no]
			if got := st.Deadline.Sub(st.AcceptedAt); got != tc.want {
				t.Errorf("timeout %q reached the backend as %s, want %s", tc.timeout, got, tc.want)
			}
			continue
		}
		if a.status != http.StatusBadRequest || a.code() != "bad_timeout" {
			t.Errorf("timeout %q: %d %s, want 400 bad_timeout", tc.timeout, a.status, a.body)
			continue
		}
		if msg := a.message(); !strings.Contains(msg, "from 1s to 24h") || !strings.Contains(msg, tc.timeout) {
			t.Errorf("timeout %q: message %q does not name the value and the bounds (from 1s to 24h)", tc.timeout, msg)
		}
		if _, ok := f.tasks[no]; ok {
			t.Errorf("timeout %q: the task was stored", tc.timeout)
		}
	}
	if localapi.MinTaskTimeout != time.Second || localapi.MaxTaskTimeout != 24*time.Hour {
		t.Errorf("bounds %s..%s, PROTOCOL.md §3 says 1s..24h", localapi.MinTaskTimeout, localapi.MaxTaskTimeout)
	}
}
