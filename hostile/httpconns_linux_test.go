package hostile

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// httpConnBound is the listener's total bound on connections
// (localapi.DefaultMaxConns, PROTOCOL §8): the suite runs the binary, so
// it states the number rather than importing it.
const httpConnBound = 512

// TestIdleKeepAliveFloodBounded is the pen-test's §4: 8,000 idle
// keep-alive connections from 32 addresses were all kept (+154 MiB, 8,015
// descriptors). Connections are bounded per address and in total; over a
// bound the longest idle ones are closed first, never a request in flight
// (one is sent half-way before the flood and finished after it), and a new
// client still gets in.
func TestIdleKeepAliveFloodBounded(t *testing.T) {
	a := start(t, Setup{})
	host := "127.0.0.1:" + a.port(t)
	// A request in flight from the flood's first address: its headers and
	// half its body are sent, the rest comes after the flood.
	body := `{"task_no":"INFLIGHT-1","printer":"p0","document":{"lines":[{"text":"INFLIGHT"},{"cut":"partial"}]}}`
	inflight := dialFrom(t, a, 40)
	fmt.Fprintf(inflight, "POST /api/v1/tasks HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		host, a.Token, len(body), body[:20])
	time.Sleep(200 * time.Millisecond) // let the agent read the headers (another process)

	fdsBefore, rssBefore := fdCount(t, a.Pid()), rssMiB(t, a.Pid())
	const addrs, each = 16, 80
	var (
		mu   sync.Mutex
		kept []net.Conn
		wg   sync.WaitGroup
	)
	for n := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				c, err := dialFromErr(a, 40+n)
				if err != nil {
					t.Errorf("127.0.0.%d: %v", 40+n, err)
					return
				}
				t.Cleanup(func() { c.Close() })
				c.SetDeadline(time.Now().Add(20 * time.Second))
				fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", host)
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Errorf("127.0.0.%d: a keep-alive request: %v", 40+n, err)
					return
				}
				resp.Body.Close()
				mu.Lock()
				kept = append(kept, c)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	time.Sleep(500 * time.Millisecond) // the agent closes what it closes (another process)
	fdsAfter, rssAfter := fdCount(t, a.Pid()), rssMiB(t, a.Pid())
	open := 0
	for _, c := range kept {
		c.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && strings.Contains(err.Error(), "timeout") {
			open++
		}
	}
	t.Logf("%d idle keep-alive connections from %d addresses: agent fds %d -> %d, RSS %d -> %d MiB; %d still open", addrs*each, addrs, fdsBefore, fdsAfter, rssBefore, rssAfter, open)
	if fdsAfter-fdsBefore > httpConnBound || open > httpConnBound {
		t.Errorf("the agent kept %d of %d idle connections (%d more descriptors); want at most %d", open, addrs*each, fdsAfter-fdsBefore, httpConnBound)
	}

	// The request in flight was not cut: it ends and is answered.
	inflight.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprint(inflight, body[20:])
	resp, err := http.ReadResponse(bufio.NewReader(inflight), nil)
	if err != nil {
		t.Fatalf("the request in flight during the flood: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("the request in flight during the flood: HTTP %d, want 202", resp.StatusCode)
	}
	// A new client gets in.
	if code := a.submit(t, "AFTER-CONN-FLOOD"); code != http.StatusAccepted {
		t.Errorf("a POS ticket after the flood: HTTP %d, want 202", code)
	}
	for _, c := range kept {
		c.Close()
	}
}

// dialFrom opens a TCP connection to the agent's listener from 127.0.0.n,
// closed when the test ends.
func dialFrom(t *testing.T, a *Agent, n int) net.Conn {
	t.Helper()
	c, err := dialFromErr(a, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dialFromErr is dialFrom for a goroutine: the caller closes the
// connection.
func dialFromErr(a *Agent, n int) (net.Conn, error) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(n))}, Timeout: 10 * time.Second}
	return d.Dial("tcp", strings.TrimPrefix(a.Base, "http://"))
}

// fdCount is how many file descriptors a process holds.
func fdCount(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
