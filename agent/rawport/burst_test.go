package rawport

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

// commitSink is a Sink that stores as the agent's spool does: a job is
// queued for the next group commit (where Job.InOrder is called), and
// Accept returns when that commit ends; one commit takes round however
// many jobs it carries, as one fsync serves them all.
type commitSink struct {
	*fakeSink
	round time.Duration

	mu   sync.Mutex
	next chan struct{} // closed when the commit after the current one ends
	busy bool
}

func (s *commitSink) Accept(ctx context.Context, j Job) (string, error) {
	no, err := s.fakeSink.Accept(ctx, j) // queued, in order
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	if s.next == nil {
		s.next = make(chan struct{})
	}
	done := s.next
	if !s.busy {
		s.busy = true
		go s.commit()
	}
	s.mu.Unlock()
	if j.InOrder != nil {
		j.InOrder()
	}
	select {
	case <-done:
		return no, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// commit runs commits while jobs are queued: each takes round.
func (s *commitSink) commit() {
	for {
		s.mu.Lock()
		done := s.next
		s.next = nil
		if done == nil {
			s.busy = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		time.Sleep(s.round) // the fsync
		close(done)
	}
}

// A lunch rush from one address: 60 write-and-close POS jobs at once, as
// several terminals behind one NAT (or a POS library that does not wait)
// send them, to a spool whose commit takes 100 ms. Every one is stored,
// in the order the connections came, and promptly: the jobs of a burst
// share the spool's commits. Before, each job waited for the one ahead to
// be fsync'd, one commit each, and the burst took 6 s: the longer a
// write-and-close job waits unstored, the more of them a SIGKILL loses.
func TestWriteAndCloseBurstSharesCommits(t *testing.T) {
	const n, round = 60, 100 * time.Millisecond
	s := &commitSink{fakeSink: newSink(), round: round}
	s.jobCh = make(chan Job, n)
	p := startPort(t, s, Options{})
	conns := make([]*net.TCPConn, n)
	for i := range conns {
		conns[i] = dial(t, p) // in the backlog, in order
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			if _, err := c.Write(ticket(fmt.Sprintf("RUSH %02d", i))); err != nil {
				t.Errorf("write: %v", err)
			}
			c.Close()
		})
	}
	wg.Wait()
	// Stored: on the sink's list and its commit over. A port that waits
	// for each job's commit before the next takes n rounds; sharing them,
	// with MaxReadPerAddress (8) read at once, about two a wave of 8.
	const bound = n / 2 * round
	deadline := start.Add(2 * n * round)
	for p.Stats().Jobs < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(start)
	t.Logf("%d jobs stored in %v with a %v commit", n, took.Round(time.Millisecond), round)
	if p.Stats().Jobs < n || took > bound {
		t.Fatalf("%d of %d write-and-close jobs stored in %v, want all under %v: each waited for the commit of the one before", p.Stats().Jobs, n, took, bound)
	}
	for i, j := range s.Jobs() {
		if want := ticket(fmt.Sprintf("RUSH %02d", i)); !bytes.Equal(j.Data, want) {
			t.Fatalf("job %d is %q, want %q", i+1, j.Data, want)
		}
	}
}
