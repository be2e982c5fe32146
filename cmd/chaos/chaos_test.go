package main

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testLog writes the run's progress lines to t.Log as they come.
type testLog struct {
	t  *testing.T
	mu sync.Mutex
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestChaosShort is `make chaos` in 60 seconds, inside `make test`: the
// real binary, 8 emulated printers, the reference cloud, ~3,000 tickets
// at ~50/s with bursts, every fault of the full run and 3 SIGKILLs. It
// fails on any violation of the promise. PRINTGATE_CHAOS_SEED replays a
// seed.
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos run takes about two minutes")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("PRINTGATE_CHAOS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("PRINTGATE_CHAOS_SEED=%q: %v", s, err)
		}
		seed = n
	}
	t.Logf("seed %d (replay with PRINTGATE_CHAOS_SEED=%d go test -run TestChaosShort ./cmd/chaos)", seed, seed)
	out := t.TempDir()
	res, err := Run(context.Background(), Options{
		Duration: 60 * time.Second, Tasks: 3000, Rate: 50, Kills: 3, Seed: seed,
		Out: out, Drain: 2 * time.Minute, Log: &testLog{t: t},
		Command: "PRINTGATE_CHAOS_SEED=" + strconv.FormatUint(seed, 10) + " go test -run TestChaosShort ./cmd/chaos",
	})
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	writeTable(&table, res)
	t.Log(table.String())
	if res.Kills < 3 {
		t.Errorf("%d kills, want 3", res.Kills)
	}
	if n := res.Accepted + res.RawAcked + res.RawBlind; n < 2900 {
		t.Errorf("only %d of 3000 tasks accepted (%d of them raw jobs, %d more written and closed)", n, res.RawAcked, res.RawBlind)
	}
	if n := res.RawAcked + res.RawBlind; n < 500 {
		t.Errorf("only %d raw jobs acknowledged or written and closed, want about a quarter of 3000", n)
	}
	if res.RawBlind < 100 {
		t.Errorf("only %d raw jobs written and closed in bursts, want about a third of the raw jobs", res.RawBlind)
	}
	if res.DropsFired == 0 {
		t.Errorf("no mid-job drops happened")
	}
	if res.AcksDropped == 0 {
		t.Errorf("the cloud lost no events_ack: the ack timeout was not walked")
	}
	// The reload path must stay walked: the port closing
	// under a kept-open client that has just sent a ticket.
	if res.Reloads == 0 {
		t.Errorf("no config reload was applied (%d got no answer)", res.ReloadsFailed)
	}
	if res.KeptOpenAcked == 0 {
		t.Errorf("the kept-open client had no ticket acknowledged (%d sent)", res.KeptOpenSent)
	}
	if res.KeptOpenAtReload == 0 {
		t.Errorf("no kept-open ticket was sent just before a reload (%d reloads, %d tickets)", res.Reloads, res.KeptOpenAcked)
	}
	// A manager's double click on Retry must stay walked.
	if res.RetriedTwice == 0 {
		t.Errorf("no Retry was clicked twice at once (%d versions made)", res.RetryVersions)
	}
	if len(res.Violations) > 0 {
		logs, _ := os.ReadFile(out + "/printgate.log")
		if len(logs) > 20000 {
			logs = logs[len(logs)-20000:]
		}
		t.Errorf("violations (seed %d):\n%s\nagent log tail:\n%s", seed, strings.Join(res.Violations, "\n"), logs)
	}
}
