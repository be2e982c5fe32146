package fleet

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"printgate/hub/store"
)

// Bounds of the jobs-that-need-someone index.
const (
	// maxIndexed bounds the jobs kept per store; past it the oldest
	// (by last change) are forgotten until the next full scan.
	maxIndexed = 200
	// maxDirty bounds the changed jobs remembered per store between two
	// reads; past it the store is scanned in full at its next read.
	maxDirty = 4096
	// rescanEvery is how often a store's jobs are scanned in full even
	// when the watch said nothing: jobs that left the record at the end of
	// the retention leave the index then.
	rescanEvery = 10 * time.Minute
	// scanPage and maxScanPages bound a full scan: at most 20 pages of
	// matches (each page reads at most the store's 5,000 next records).
	scanPage     = 1000
	maxScanPages = 20
)

// jobIndex keeps, per store a user looked at, the jobs that need someone.
// A store is scanned in full at its first read (and every rescanEvery);
// after that only the jobs the record's watch named since the last read
// are read again. Without the watch every read is a full scan.
type jobIndex struct {
	mu       sync.Mutex
	watching bool
	stores   map[string]*storeIndex
}

type storeIndex struct {
	scanned  time.Time // of the last full scan; zero: never (or it failed)
	jobs     map[string]store.Task
	dirty    map[string]struct{}
	overflow bool
}

// changed is the watch's callback: the record of storeID's taskNo was
// written.
func (x *jobIndex) changed(storeID, taskNo string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	si := x.stores[storeID]
	if si == nil || si.scanned.IsZero() || si.overflow {
		return // its next read scans it in full anyway
	}
	if len(si.dirty) >= maxDirty {
		si.overflow, si.dirty = true, nil
		return
	}
	si.dirty[taskNo] = struct{}{}
}

// attention returns the store's jobs that need someone, newest first, at
// most maxAttention.
func (p *Page) attention(ctx context.Context, id string) ([]store.Task, error) {
	x := &p.index
	now := p.now()
	x.mu.Lock()
	if x.stores == nil {
		x.stores = map[string]*storeIndex{}
	}
	si := x.stores[id]
	if si == nil {
		si = &storeIndex{}
		x.stores[id] = si
	}
	full := !x.watching || si.scanned.IsZero() || si.overflow || now.Sub(si.scanned) >= rescanEvery
	dirty := si.dirty
	si.dirty, si.overflow = map[string]struct{}{}, false
	if full {
		// Marks that arrive while the scan runs are kept for the next read.
		si.scanned = now
	}
	x.mu.Unlock()

	if full {
		jobs, err := p.scan(ctx, id)
		x.mu.Lock()
		if err != nil {
			si.scanned = time.Time{}
		} else {
			si.jobs = jobs
		}
		x.mu.Unlock()
		if err != nil {
			return nil, err
		}
	} else {
		for no := range dirty {
			t, err := p.st.Task(ctx, id, no)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				// Read it again next time.
				x.changed(id, no)
				return nil, err
			}
			x.mu.Lock()
			if err == nil && needsSomeone(t) {
				t.Job = nil
				si.jobs[no] = t
			} else {
				delete(si.jobs, no)
			}
			x.mu.Unlock()
		}
	}
	x.mu.Lock()
	out := make([]store.Task, 0, len(si.jobs))
	for _, t := range si.jobs {
		out = append(out, t)
	}
	x.mu.Unlock()
	slices.SortFunc(out, func(a, b store.Task) int { return b.Updated.Compare(a.Updated) })
	if len(out) > maxIndexed {
		x.mu.Lock()
		for _, t := range out[maxIndexed:] {
			delete(si.jobs, t.TaskNo)
		}
		x.mu.Unlock()
	}
	return out[:min(len(out), maxAttention)], nil
}

// scan reads the store's jobs in the states that may need someone, page
// by page, and keeps those that do.
func (p *Page) scan(ctx context.Context, id string) (map[string]store.Task, error) {
	states := append(slices.Clone(attentionStates), movingStates...)
	jobs := map[string]store.Task{}
	after := ""
	for range maxScanPages {
		tasks, next, err := p.st.ListTasks(ctx, id, after, states, scanPage)
		if err != nil {
			return nil, err
		}
		for _, t := range tasks {
			if needsSomeone(t) {
				jobs[t.TaskNo] = t
			}
		}
		if next == "" {
			break
		}
		after = next
	}
	return jobs, nil
}
