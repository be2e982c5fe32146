package hostile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"printgate/sync/wire"
)

// TestCloudCommandFloodLogBounded is the pen-test's §1: 220,000 cancels
// of unknown tasks logged one WARN each ("cloud command failed"), and
// 5,000 jobs for an unknown printer one each ("cloud job rejected"): the
// log rotated through all its backups in a minute, taking the history
// that would have shown the attack with it. Each is answered as before,
// and logged a handful of times a minute, then counted.
func TestCloudCommandFloodLogBounded(t *testing.T) {
	c := newHostileCloud(t)
	a := start(t, c.setup())
	ws := c.accepted(t, a)
	var answers atomic.Int64
	go func() { // count the agent's answers, so the test knows it has handled the flood
		for {
			_, b, err := ws.ReadMessage()
			if err != nil {
				return
			}
			var f struct{ Type string }
			if json.Unmarshal(b, &f) == nil && (f.Type == wire.TypeCommandResult || f.Type == wire.TypeJobAck) {
				answers.Add(1)
			}
		}
	}()
	const each = 2000
	ws.SetWriteDeadline(time.Now().Add(60 * time.Second))
	for i := range each {
		for _, f := range []map[string]any{
			{"type": wire.TypeCancel, "id": fmt.Sprintf("c-%d", i), "task_no": fmt.Sprintf("NO-SUCH-%d", i)},
			{"type": wire.TypeJob, "task_no": fmt.Sprintf("NOPRINTER-%d", i), "printer": "no-such-printer", "payload": []byte("x\n")},
		} {
			b, _ := json.Marshal(f)
			if err := ws.WriteMessage(websocket.TextMessage, b); err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
		}
	}
	for deadline := time.Now().Add(60 * time.Second); answers.Load() < 2*each; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d frames answered", answers.Load(), 2*each)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(a.Dir, "printgate*.log*"))
	var cmds, jobs int
	for _, f := range logs {
		b, _ := os.ReadFile(f)
		cmds += strings.Count(string(b), "cloud command failed")
		jobs += strings.Count(string(b), "cloud job rejected")
	}
	t.Logf("%d cancels of unknown tasks and %d jobs for an unknown printer: %d and %d log lines about them", each, each, cmds, jobs)
	if cmds > 20 || jobs > 20 {
		t.Errorf("%d log lines for %d failed cloud commands and %d for %d rejected jobs; want a handful and a count", cmds, each, jobs, each)
	}
}
