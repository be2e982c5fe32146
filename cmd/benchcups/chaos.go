package main

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// chaosProxy sits between a host and an emulated printer and breaks the link
// the way cmd/chaos's faults do: a seeded 15% of jobs lose their
// connection part-way through (a reset, both ways), and the printer goes
// offline for seeded spells (connects refused, open connections reset).
// Drops are decided per ticket — by the tag in the job's header line and
// how often that tag was sent before — so two proxies with the same seed
// drop the same jobs whoever sends them, and a resent job gets its own
// chance of being dropped again.
type chaosProxy struct {
	upstream string
	addr     string
	seed     uint64
	dropRate float64
	jobLen   int // bytes in one job, to place the cut inside it

	mu      sync.Mutex
	ln      net.Listener
	conns   map[net.Conn]struct{}
	sent    map[string]int // tag → headers seen so far
	chaos   bool
	offline bool
	closed  bool
	dropped []string // tags whose job was cut, in order
	spells  int
	wg      sync.WaitGroup
}

// newChaosProxy listens on a free loopback port and forwards to upstream,
// without faults until startChaos.
func newChaosProxy(upstream string, seed uint64, dropRate float64, jobLen int) (*chaosProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("chaos proxy: %w", err)
	}
	p := &chaosProxy{upstream: upstream, addr: ln.Addr().String(), seed: seed, dropRate: dropRate, jobLen: jobLen,
		ln: ln, conns: map[net.Conn]struct{}{}, sent: map[string]int{}}
	p.wg.Add(1)
	go p.accept(ln)
	return p, nil
}

func (p *chaosProxy) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		up, err := net.DialTimeout("tcp", p.upstream, 2*time.Second)
		if err != nil {
			reset(c)
			continue
		}
		p.mu.Lock()
		if p.closed || p.offline {
			p.mu.Unlock()
			reset(c)
			reset(up)
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipeUp(c, up)
		go p.pipeDown(up, c)
	}
}

// reset closes c with an RST, as a link failure looks to the peer.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

func (p *chaosProxy) forget(cs ...net.Conn) {
	p.mu.Lock()
	for _, c := range cs {
		delete(p.conns, c)
	}
	p.mu.Unlock()
}

// pipeDown copies the printer's answers to the host.
func (p *chaosProxy) pipeDown(up, c net.Conn) {
	defer p.wg.Done()
	io.Copy(c, up)
	c.Close()
	up.Close()
	p.forget(c, up)
}

// pipeUp copies the host's bytes to the printer, looking for job headers
// and cutting the link inside the jobs the schedule drops.
func (p *chaosProxy) pipeUp(c, up net.Conn) {
	defer p.wg.Done()
	defer p.forget(c, up)
	var tail []byte // end of the previous read, for a header split across reads
	cutAt := -1     // bytes still to forward before the cut, -1: none planned
	buf := make([]byte, 8192)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			data := buf[:n]
			if cutAt < 0 {
				cutAt = p.plan(append(tail, data...), len(tail))
			}
			if cutAt >= 0 && cutAt < len(data) {
				up.Write(data[:cutAt])
				reset(c)
				reset(up)
				return
			}
			if _, werr := up.Write(data); werr != nil {
				reset(c)
				return
			}
			if cutAt >= 0 {
				cutAt -= len(data)
			}
			tail = append(tail[:0], data[max(0, len(data)-64):]...)
		}
		if err != nil {
			// The host closed its side: let the printer see the end too.
			if tc, ok := up.(*net.TCPConn); ok {
				tc.CloseWrite()
			}
			return
		}
	}
}

// plan finds job headers in seen (whose first skip bytes were already
// forwarded) and returns where, counted from the first new byte, the
// schedule cuts the link, or -1.
func (p *chaosProxy) plan(seen []byte, skip int) int {
	const marker = "TICKET "
	from := 0
	for {
		i := bytes.Index(seen[from:], []byte(marker))
		if i < 0 {
			return -1
		}
		i += from
		j := bytes.IndexByte(seen[i:], '\n')
		if j < 0 {
			return -1 // the header's end comes with the next read
		}
		from = i + j
		if i+j < skip {
			continue // complete in the tail: judged with the previous read
		}
		tag := string(seen[i+len(marker) : i+j])
		p.mu.Lock()
		nth := p.sent[tag]
		p.sent[tag]++
		chaos := p.chaos
		p.mu.Unlock()
		if !chaos {
			continue
		}
		r := dropDraw(p.seed, tag, nth)
		if r.Float64() >= p.dropRate {
			continue
		}
		p.mu.Lock()
		p.dropped = append(p.dropped, tag)
		p.mu.Unlock()
		// Somewhere between a tenth and nine tenths of the job.
		off := p.jobLen/10 + r.IntN(max(1, p.jobLen*8/10))
		return max(0, i+off-skip)
	}
}

// dropDraw is the random stream for the nth sending of tag: the same for
// every proxy with the same seed. The inputs go through splitmix64 first:
// PCG's first outputs for seeds that differ in a few bits (tags that differ
// in their last digit) are correlated, which skewed the drop rate.
func dropDraw(seed uint64, tag string, nth int) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(tag))
	x := splitmix64(seed ^ h.Sum64())
	return rand.New(rand.NewPCG(x, splitmix64(x+uint64(nth))))
}

// splitmix64 is one step of the SplitMix64 generator: a full-avalanche mix
// of x.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// startChaos turns drops on and runs the offline schedule until stop: each
// second, a printer online goes offline with chance rate for 2–6 s.
func (p *chaosProxy) startChaos(rate float64) (stop func()) {
	p.mu.Lock()
	p.chaos = true
	p.mu.Unlock()
	rng := rand.New(rand.NewPCG(p.seed, 0x0ff1))
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		left := 0
		for {
			select {
			case <-quit:
				if left > 0 {
					p.setOffline(false)
				}
				return
			case <-t.C:
			}
			if left > 0 {
				if left--; left == 0 {
					p.setOffline(false)
				}
				continue
			}
			if rng.Float64() < rate {
				left = 2 + rng.IntN(5)
				p.setOffline(true)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			<-done
			p.mu.Lock()
			p.chaos = false
			p.mu.Unlock()
		})
	}
}

// setOffline closes the listener and resets every connection, or listens
// again on the same address.
func (p *chaosProxy) setOffline(on bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.offline == on {
		return nil
	}
	p.offline = on
	if on {
		p.spells++
		p.ln.Close()
		for c := range p.conns {
			reset(c)
		}
		return nil
	}
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return fmt.Errorf("chaos proxy: back online on %s: %w", p.addr, err)
	}
	p.ln = ln
	p.wg.Add(1)
	go p.accept(ln)
	return nil
}

// stats returns the tags whose jobs were cut and how many offline spells
// ran.
func (p *chaosProxy) stats() (dropped []string, spells int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.dropped...), p.spells
}

// close stops the proxy and its connections.
func (p *chaosProxy) close() {
	p.mu.Lock()
	p.closed = true
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// naiveOutcome is what the push-and-forget client knew about one ticket.
type naiveOutcome int

const (
	naiveSent      naiveOutcome = iota // connect and write succeeded: the client believes it printed
	naiveRefused                       // connect failed: the client saw an error
	naiveWriteFail                     // the write failed: the client saw an error
)

// pushAndForget is the naive baseline: connect, write the job, close. No
// status query, no barrier, no retry.
func pushAndForget(addr string, job []byte) naiveOutcome {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return naiveRefused
	}
	defer c.Close()
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(job); err != nil {
		return naiveWriteFail
	}
	return naiveSent
}
