package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"printgate/internal/proctest"
)

// clusterNodes is a three-node cluster's options on loopback ports: node
// i's data dir, name and routes.
type clusterNodes struct {
	dirs   []string
	routes []string
	name   string
	// tls, when set, adds node i's route TLS files.
	tls func(i int, c *ClusterOptions)
}

func newClusterNodes(t *testing.T, n int) *clusterNodes {
	t.Helper()
	c := &clusterNodes{name: "test-cluster"}
	for range n {
		c.dirs = append(c.dirs, t.TempDir())
		c.routes = append(c.routes, net.JoinHostPort("127.0.0.1", strconv.Itoa(proctest.FreePort(t))))
	}
	return c
}

// opts are node i's Options: every other node is a peer.
func (c *clusterNodes) opts(i int, wait time.Duration) Options {
	var peers []string
	for j, r := range c.routes {
		if j != i {
			peers = append(peers, r)
		}
	}
	co := &ClusterOptions{Name: c.name, Listen: c.routes[i], Peers: peers, Wait: wait}
	if c.tls != nil {
		c.tls(i, co)
	}
	return Options{Dir: c.dirs[i], Node: fmt.Sprintf("n%d", i+1), Logger: slog.New(slog.DiscardHandler), Cluster: co}
}

// openAll opens nodes idx at once (each waits for the others' votes)
// and closes them when the test ends.
func (c *clusterNodes) openAll(t *testing.T, idx ...int) []*Store {
	t.Helper()
	out := make([]*Store, len(idx))
	errs := make([]error, len(idx))
	var wg sync.WaitGroup
	for k, i := range idx {
		wg.Go(func() { out[k], errs[k] = Open(context.Background(), c.opts(i, 30*time.Second)) })
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			for _, s := range out {
				if s != nil {
					s.Close()
				}
			}
			t.Fatalf("node n%d: %v", idx[k]+1, err)
		}
	}
	for _, s := range out {
		t.Cleanup(func() { s.Close() })
	}
	return out
}

// eventually retries f until it returns nil or 10 s pass: a copy of a
// bucket on another node applies a write a moment after its leader.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestClusterReplicatesAndSurvivesANode ensures three nodes form one
// JetStream cluster with every bucket at three copies; a job stored on
// one node is read, deduplicated and announced on the others, an owner
// claim on one is seen by another's watch; with one node shut down the
// other two keep storing jobs and lose none; restarted, it has them all.
func TestClusterReplicatesAndSurvivesANode(t *testing.T) {
	c := newClusterNodes(t, 3)
	t0 := time.Now()
	nodes := c.openAll(t, 0, 1, 2)
	t.Logf("three nodes opened in %v", time.Since(t0).Round(time.Millisecond))
	a, b, cc := nodes[0], nodes[1], nodes[2]
	ctx := context.Background()

	st, err := a.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.MetaLeader == "" || len(st.Buckets) == 0 {
		t.Fatalf("cluster status %+v: want a meta leader and the buckets", st)
	}
	for _, bk := range st.Buckets {
		if len(bk.Replicas)+1 != MaxReplicas || bk.Leader == "" {
			t.Errorf("bucket %s: leader %q, %d replicas besides it; want a leader and %d copies in all", bk.Name, bk.Leader, len(bk.Replicas), MaxReplicas)
		}
	}

	info := seed(t, a)
	announced := make(chan string, 4)
	stop, err := b.WatchJobs("s1", func(no string) {
		select {
		case announced <- no:
		default: // the jobs stored later are not awaited here
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	owners := make(chan Owner, 4)
	stopOwners, err := b.WatchOwners(func(_ string, o Owner, _ uint64) {
		select {
		case owners <- o:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stopOwners()

	now := time.Now().UTC()
	if _, err := a.Submit(ctx, info, job("J1"), "", now); err != nil {
		t.Fatal(err)
	}
	select {
	case no := <-announced:
		if no != "J1" {
			t.Fatalf("node n2 was announced %q, want J1", no)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a job stored on n1 was not announced on n2")
	}
	eventually(t, "J1 on n3", func() error { _, err := cc.Task(ctx, "s1", "J1"); return err })
	if _, err := cc.Submit(ctx, info, job("J1"), "", now); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("J1 again on n3: %v, want ErrDuplicate", err)
	}
	if _, _, err := cc.Claim(ctx, "s1", "conn-on-n3", "agent-1", now); err != nil {
		t.Fatal(err)
	}
	select {
	case o := <-owners:
		if o.Node != "n3" || o.Conn != "conn-on-n3" {
			t.Fatalf("n2 saw owner %+v, want n3's claim", o)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("n3's claim was not seen by n2's watch")
	}

	// One node down: the others still take and keep jobs.
	t.Logf("replication checked at %v", time.Since(t0).Round(time.Millisecond))
	a.Close()
	t.Logf("n1 closed at %v", time.Since(t0).Round(time.Millisecond))
	var stored []string
	for i := range 20 {
		no := fmt.Sprintf("K%d", i)
		eventually(t, "submit "+no+" with n1 down", func() error {
			_, err := b.Submit(ctx, info, job(no), "", now)
			if errors.Is(err, ErrDuplicate) {
				return nil // stored by an earlier try whose answer was lost
			}
			return err
		})
		stored = append(stored, no)
	}
	pend, err := cc.Pending(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(pend, ","); !strings.Contains(got, "J1") || len(pend) != 21 {
		t.Fatalf("pending on n3 with n1 down: %v, want J1 and the 20 K jobs", pend)
	}

	t.Logf("20 jobs stored with n1 down at %v", time.Since(t0).Round(time.Millisecond))
	// Restarted, n1 catches up on what it missed.
	a2, err := Open(ctx, c.opts(0, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	t.Logf("n1 reopened at %v", time.Since(t0).Round(time.Millisecond))
	for _, no := range stored {
		eventually(t, no+" on the restarted n1", func() error { _, err := a2.Task(ctx, "s1", no); return err })
	}
	if err := a2.Ready(); err != nil {
		t.Fatalf("n1 ready with the cluster whole: %v", err)
	}

	// Two of three down: the one left says it takes no writes.
	b.Close()
	cc.Close()
	lost := time.Now()
	deadline := lost.Add(30 * time.Second)
	for a2.Ready() == nil {
		if time.Now().After(deadline) {
			t.Fatal("n1 alone still says ready after 30 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := a2.Ready(); !strings.Contains(err.Error(), "start the stopped nodes") {
		t.Fatalf("n1 alone: %v", err)
	}
	t.Logf("n1 alone not ready after %v", time.Since(lost).Round(time.Millisecond))
}

// TestClusterWaitNamesUnreachablePeers ensures a node whose peers are all
// down gives up after its wait with an error naming them and the fix,
// and a node waiting for peers started after it opens once they are up.
func TestClusterWaitNamesUnreachablePeers(t *testing.T) {
	c := newClusterNodes(t, 3)
	start := time.Now()
	s, err := Open(context.Background(), c.opts(0, 2*time.Second))
	if err == nil {
		s.Close()
		t.Fatal("a node alone in a three-node cluster opened")
	}
	for _, want := range []string{"no JetStream meta leader within 2s", c.routes[1], c.routes[2], "start those nodes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("gave up after %v, want about the 2 s wait", d)
	}
	// Started one by one, as an operator would, the first node waits for
	// the others and all open.
	c2 := newClusterNodes(t, 3)
	first := make(chan error, 1)
	go func() {
		s, err := Open(context.Background(), c2.opts(0, 30*time.Second))
		if err == nil {
			t.Cleanup(func() { s.Close() })
		}
		first <- err
	}()
	time.Sleep(time.Second) // the first node is waiting alone
	start = time.Now()
	c2.openAll(t, 1, 2)
	if err := <-first; err != nil {
		t.Fatalf("the first node, its peers started after it: %v", err)
	}
	t.Logf("the three opened %v after the second and third started", time.Since(start).Round(time.Millisecond))
}
