package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"sort"
	"testing"
	"time"

	"go.uber.org/goleak"

	"printgate/drivers/printertest"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// goroutine has an owner that stops it (docs/DESIGN.md, invariant 6).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// printed feeds jobs to an emulator and returns what its paper shows.
func printed(t *testing.T, jobs ...[]byte) map[string]*paperCopy {
	t.Helper()
	p := printertest.New(printertest.Options{Name: "t"})
	defer p.Close()
	for _, j := range jobs {
		p.Write(j)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Every job here but a cut-off one ends in a cut.
	want := 0
	for _, j := range jobs {
		want += bytes.Count(j, []byte{0x1d, 'V'})
	}
	if _, err := p.WaitTickets(ctx, want); err != nil {
		t.Fatal(err)
	}
	return readPaper(p)
}

func TestPaperWholeAndPartial(t *testing.T) {
	whole := ticketBytes("A1", 5)
	cut := ticketBytes("B1", 5)
	cut = cut[:len(cut)/2] // the connection died here
	paper := printed(t, whole, cut, ticketBytes("C1", 5))
	if !paper["A1"].Complete(5) || paper["A1"].Plain != 1 || paper["A1"].EndAt.IsZero() {
		t.Errorf("A1: %+v, want one whole copy with its cut time", paper["A1"])
	}
	if b := paper["B1"]; b.Complete(5) || !b.Seen() {
		t.Errorf("B1 was cut in half: %+v, want seen but not complete", b)
	}
	// C1's first line lands after B1's open last line: still found.
	if !paper["C1"].Complete(5) {
		t.Errorf("C1 after a cut-off job: %+v, want whole", paper["C1"])
	}
	if paper["D1"].Seen() {
		t.Errorf("D1 was never sent but is seen")
	}
}

func TestPaperBannerMarksCopy(t *testing.T) {
	banner := append([]byte("\x1b@POSSIBLE DUPLICATE\n"), ticketBytes("A1", 3)[2:]...)
	paper := printed(t, ticketBytes("A1", 3), banner)
	if a := paper["A1"]; a.Plain != 1 || a.Marked != 1 || a.Ends != 2 {
		t.Errorf("A1: plain %d marked %d ends %d, want 1, 1, 2", a.Plain, a.Marked, a.Ends)
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if p := percentile(ds, 0.5); p != 50*time.Millisecond {
		t.Errorf("p50 = %v, want 50ms", p)
	}
	if p := percentile(ds, 0.99); p != 99*time.Millisecond {
		t.Errorf("p99 = %v, want 99ms", p)
	}
	if p := percentile(nil, 0.5); p != 0 {
		t.Errorf("p50 of nothing = %v", p)
	}
}

// send pushes jobs through the proxy on one connection, as printgate does,
// or one connection per job, as the naive client does.
func sendVia(t *testing.T, addr string, oneConn bool, jobs ...[]byte) {
	t.Helper()
	if !oneConn {
		for _, j := range jobs {
			pushAndForget(addr, j)
		}
		return
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, j := range jobs {
		c.Write(j)
	}
}

// eventually polls cond until it holds or 5 s pass: the proxy and the
// emulator work on their own goroutines and announce nothing.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestProxyCutsScheduledJobsMidJob(t *testing.T) {
	p := printertest.New(printertest.Options{Name: "t"})
	defer p.Close()
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	job := ticketBytes("X0001", 20)
	px, err := newChaosProxy(p.Addr(), 1, 1.0, len(job)) // every job dropped
	if err != nil {
		t.Fatal(err)
	}
	defer px.close()
	stop := px.startChaos(0)
	sendVia(t, px.addr, false, job, ticketBytes("X0002", 20))
	eventually(t, "both jobs partly on paper", func() bool {
		paper := readPaper(p)
		return paper["X0001"].Seen() && paper["X0002"].Seen()
	})
	stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.WaitConnections(ctx, 0); err != nil {
		t.Fatal(err)
	}
	paper := readPaper(p)
	for _, tag := range []string{"X0001", "X0002"} {
		if c := paper[tag]; c.Complete(20) {
			t.Errorf("%s: %+v, want part of it on paper, not all", tag, c)
		}
	}
	if got, _ := px.stats(); len(got) != 2 {
		t.Errorf("dropped %v, want both jobs", got)
	}
	if r := p.Received(); r >= int64(2*len(job)) {
		t.Errorf("printer received %d bytes of 2×%d: nothing was cut", r, len(job))
	}
}

// A header split across two reads is judged once, when its line is whole.
func TestPlanHeaderSplitAcrossReads(t *testing.T) {
	px := &chaosProxy{seed: 1, dropRate: 1, jobLen: 1000, chaos: true, sent: map[string]int{}}
	first := []byte("\x1b@TICK")
	if at := px.plan(first, 0); at != -1 {
		t.Fatalf("half a header planned a cut at %d", at)
	}
	second := []byte("ET S1\nITEM S1 001\n")
	at := px.plan(append(append([]byte(nil), first...), second...), len(first))
	if at < 100-len(first) || at > 900 {
		t.Fatalf("cut at %d of the new bytes, want inside the job (100..900 from its header)", at)
	}
	// The next read starts with the old tail holding the whole header.
	tail := append(append([]byte(nil), first...), second...)
	if again := px.plan(append(tail, "ITEM S1 002\n"...), len(tail)); again != -1 {
		t.Errorf("the same header was judged twice (cut at %d)", again)
	}
	if got, _ := px.stats(); len(got) != 1 || got[0] != "S1" {
		t.Errorf("dropped %v, want [S1]", got)
	}
}

func TestProxyPassesThroughWithoutChaos(t *testing.T) {
	p := printertest.New(printertest.Options{Name: "t"})
	defer p.Close()
	if err := p.ListenTCP(); err != nil {
		t.Fatal(err)
	}
	px, err := newChaosProxy(p.Addr(), 1, 1.0, 900)
	if err != nil {
		t.Fatal(err)
	}
	defer px.close()
	sendVia(t, px.addr, true, ticketBytes("Y0001", 20), ticketBytes("Y0002", 20))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := p.WaitTickets(ctx, 2); err != nil {
		t.Fatal(err)
	}
	paper := readPaper(p)
	if !paper["Y0001"].Complete(20) || !paper["Y0002"].Complete(20) {
		t.Errorf("without chaos the proxy must not cut: %+v %+v", paper["Y0001"], paper["Y0002"])
	}
}

// Two proxies with one seed drop the same jobs: the comparison under chaos
// is fair only if so.
func TestProxySameSeedSameDrops(t *testing.T) {
	var got [2][]string
	for i := range got {
		p := printertest.New(printertest.Options{Name: "t"})
		if err := p.ListenTCP(); err != nil {
			t.Fatal(err)
		}
		job := ticketBytes("Z0000", 20)
		px, err := newChaosProxy(p.Addr(), 42, 0.3, len(job))
		if err != nil {
			t.Fatal(err)
		}
		stop := px.startChaos(0)
		for j := range 40 {
			pushAndForget(px.addr, ticketBytes(fmt.Sprintf("Z%04d", j), 20))
		}
		eventually(t, "the proxy saw all 40 headers", func() bool {
			px.mu.Lock()
			defer px.mu.Unlock()
			return len(px.sent) == 40
		})
		stop()
		got[i], _ = px.stats()
		px.close()
		p.Close()
	}
	// 40 jobs at 0.3: 12 expected; outside 3..22 is a broken draw.
	if len(got[0]) < 3 || len(got[0]) > 22 {
		t.Fatalf("%d drops %v: want about 12 of 40 at rate 0.3", len(got[0]), got[0])
	}
	// Connections are served concurrently: compare the sets.
	sort.Strings(got[0])
	sort.Strings(got[1])
	if a, b := fmtTags(got[0]), fmtTags(got[1]); a != b {
		t.Errorf("same seed, different drops:\n%s\n%s", a, b)
	}
}

func fmtTags(tags []string) string {
	var b bytes.Buffer
	for _, t := range tags {
		b.WriteString(t + " ")
	}
	return b.String()
}
