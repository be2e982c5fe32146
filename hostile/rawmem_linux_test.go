package hostile

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Memory per raw connection is bounded, per connection and for all raw
// ports together: 64 connections from one address, each sending about
// 1 MiB of ESC * 0 bit-image bands and holding the job open (its last
// command unfinished), once took the agent from 78 to 657 MiB (the job,
// the decoder's copy of it and its bands expanded 6 times, for every
// connection). Now at most 8 connections of an address are read at once,
// the others wait unread, the decoder keeps no more than a few commands,
// and past the shared budget connections wait unread too. The test fails
// if the agent grows by more than 128 MiB, from one address or from eight.
func TestRawMemoryBoundedPerConnection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		addrs int
	}{{"one address", 1}, {"eight addresses", 8}} {
		t.Run(tc.name, func(t *testing.T) {
			a := start(t, Setup{Raw: true})
			before := rssMiB(t, a.Pid())
			// ESC * 0 (8-dot single density), 4096 columns a band, a line
			// feed under each, ~1 MiB in all; then half of one more band.
			band := append([]byte{0x1b, '*', 0, 0x00, 0x10}, bytes.Repeat([]byte{0xAA}, 4096)...)
			band = append(band, '\n')
			job := append([]byte("\x1b@"), bytes.Repeat(band, 250)...)
			job = append(job, band[:2000]...)
			var wg sync.WaitGroup
			for i := range 64 {
				c, err := dialRawFrom(t, a, fmt.Sprintf("127.0.0.%d", 10+i%tc.addrs))
				if err != nil {
					if isReset(err) {
						continue
					}
					t.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					_ = c.SetWriteDeadline(time.Now().Add(20 * time.Second))
					c.Write(job) // connections left unread block here: fine
				}()
			}
			peak := before
			deadline := time.Now().Add(8 * time.Second)
			for time.Now().Before(deadline) {
				peak = max(peak, rssMiB(t, a.Pid()))
				time.Sleep(100 * time.Millisecond) // another process: sample it
			}
			t.Logf("agent RSS %d MiB before, %d MiB peak with 64 connections from %d addresses holding %d bytes of ESC * 0 each", before, peak, tc.addrs, len(job))
			if grew := peak - before; grew > 128 {
				t.Fatalf("the agent grew by %d MiB for 64 raw connections", grew)
			}
			wg.Wait()
		})
	}
}
