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
// component=link once (issue 26 §6: the service and the link package
// each added it, and every line said "component=link component=link").
func TestLinkLogsComponentOnce(t *testing.T) {
	r := startCloudRig(t, cloudtest.Options{}, "", 30*time.Second)
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
