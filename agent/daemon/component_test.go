package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"printgate/sync/cloudtest"
)

// TestLinkLogsComponentOnce ensures the cloud link's log lines carry
// component=link once (the service and the link package once
// each added it, and every line said "component=link component=link").
func TestLinkLogsComponentOnce(t *testing.T) {
	r := startCloudRig(t, cloudtest.Options{}, "", 30*time.Second)
	// The cloud sees the connection before the link has logged it: under
	// Wine the rig once stopped first and the log held no link line at all.
	// The log is a file another goroutine writes; nothing to wait on but it.
	for {
		if b, _ := os.ReadFile(filepath.Join(r.dir, "printgate.log")); strings.Contains(string(b), "component=link") || strings.Contains(string(b), `"component":"link"`) {
			break
		}
		if r.limit.Err() != nil {
			t.Fatal("the link logged nothing within the rig's wait")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(r.dir, "printgate.log"))
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, line := range strings.Split(string(b), "\n") {
		n := strings.Count(line, `component=link`) + strings.Count(line, `"component":"link"`)
		if n > 1 {
			t.Errorf("component twice: %s", line)
		}
		seen += n
	}
	if seen == 0 {
		t.Fatalf("no line of the link in the log:\n%s", b)
	}
}
