package rawport

import (
	"crypto/sha256"
	"slices"
	"sync"
	"time"
)

// maxDupEntries bounds the duplicate memory of a port: a POS retries its
// last few tickets, not its last thousand.
const maxDupEntries = 64

// dupMemory remembers the hashes of recent jobs on one port.
type dupMemory struct {
	mu      sync.Mutex
	window  time.Duration
	entries []dupEntry // oldest first
}

type dupEntry struct {
	sum [sha256.Size]byte
	at  time.Time
}

// note records data seen at now and reports whether the same bytes were
// recorded within the window. It returns a forget func that removes the
// record again, for a job the Sink did not take (its retry is no duplicate).
func (m *dupMemory) note(data []byte, now time.Time) (dup bool, forget func()) {
	sum := sha256.Sum256(data)
	m.mu.Lock()
	defer m.mu.Unlock()
	keep := m.entries[:0]
	for _, e := range m.entries {
		if now.Sub(e.at) < m.window {
			keep = append(keep, e)
		}
	}
	clear(m.entries[len(keep):])
	m.entries = keep
	for _, e := range m.entries {
		if e.sum == sum {
			dup = true
		}
	}
	if len(m.entries) >= maxDupEntries {
		m.entries = append(m.entries[:0], m.entries[1:]...)
	}
	e := dupEntry{sum: sum, at: now}
	m.entries = append(m.entries, e)
	return dup, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		for i := range m.entries {
			if m.entries[i] == e {
				m.entries = append(m.entries[:i], m.entries[i+1:]...)
				return
			}
		}
	}
}

// seed remembers jobs taken before the port opened (Options.Recent),
// oldest first, at most maxDupEntries of them.
func (m *dupMemory) seed(recent []Recent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range recent {
		m.entries = append(m.entries, dupEntry{sum: r.SHA256, at: r.At})
	}
	slices.SortStableFunc(m.entries, func(a, b dupEntry) int { return a.at.Compare(b.at) })
	if n := len(m.entries); n > maxDupEntries {
		m.entries = append(m.entries[:0], m.entries[n-maxDupEntries:]...)
	}
}
