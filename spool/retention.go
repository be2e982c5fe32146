package spool

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// PruneStats says what one Prune call did.
type PruneStats struct {
	Pruned  int // terminal tasks whose body and timeline were dropped
	Expired int // tombstones past the dedupe window, removed entirely
}

// pruneChunk bounds one Prune transaction so intake is never blocked long.
const pruneChunk = 2000

// Prune applies retention: terminal tasks that ended more than Retention
// ago lose their body and timeline but keep a tombstone, so their task_no
// is still refused as a duplicate; tombstones older than DedupeWindow are
// removed. Ages are measured on the spool's retention clock, which a step
// of the wall clock does not move (retentionclock.go), so a clock set
// right after running behind cannot shorten retention or the dedupe
// window; now, the wall time of the call, is stored with the clock's
// reading. Freed pages are reused by later writes; Compact shrinks the
// file. It works in bounded transactions and may be called at any time.
func (s *Spool) Prune(now time.Time) (PruneStats, error) {
	var total PruneStats
	for {
		st, err := s.pruneOnce(now)
		total.Pruned += st.Pruned
		total.Expired += st.Expired
		if err != nil {
			return total, fmt.Errorf("prune spool %s: %w", s.path, err)
		}
		if st.Pruned+st.Expired < pruneChunk {
			return total, nil
		}
	}
}

func (s *Spool) pruneOnce(now time.Time) (PruneStats, error) {
	var st PruneStats
	at := s.retentionNow()
	bodyCut := timeKey(at.Add(-s.opts.Retention), "")
	keyCut := timeKey(at.Add(-s.opts.DedupeWindow), "")
	o := &op{prepare: func(*bolt.Tx) error { st = PruneStats{}; return nil }}
	o.apply = func(tx *bolt.Tx) error {
		if err := s.age.store(tx, now); err != nil {
			return err
		}
		tasks, done, tombs := tx.Bucket(bucketTasks), tx.Bucket(bucketDone), tx.Bucket(bucketTombs)
		var doneKeys, tombKeys [][]byte
		c := done.Cursor()
		for k, _ := c.First(); k != nil && bytes.Compare(k, bodyCut) < 0 && len(doneKeys) < pruneChunk; k, _ = c.Next() {
			doneKeys = append(doneKeys, append([]byte(nil), k...))
		}
		for _, k := range doneKeys {
			if _, err := pruneDone(tx, k); err != nil {
				return err
			}
			st.Pruned++
		}
		c = tombs.Cursor()
		for k, _ := c.First(); k != nil && bytes.Compare(k, keyCut) < 0 && len(tombKeys)+st.Pruned < pruneChunk; k, _ = c.Next() {
			tombKeys = append(tombKeys, append([]byte(nil), k...))
		}
		for _, k := range tombKeys {
			if err := tasks.Delete(k[8:]); err != nil {
				return err
			}
			if err := tombs.Delete(k); err != nil {
				return err
			}
			st.Expired++
		}
		return nil
	}
	err := s.submit(o)
	return st, err
}

// CompactStats reports the file size before and after Compact.
type CompactStats struct {
	Before, After int64
}

// Compact rewrites the spool into a new file and atomically renames it over
// the old one, so space freed by Prune goes back to the disk (a bbolt file
// never shrinks by itself). Operations wait while it runs. If anything fails
// before the rename, the old file stays in use untouched.
func (s *Spool) Compact() (CompactStats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return CompactStats{}, ErrClosed
	}
	var st CompactStats
	if fi, err := os.Stat(s.path); err == nil {
		st.Before = fi.Size()
	}
	if err := s.compactFits(); err != nil {
		return st, err
	}
	tmp := s.path + ".compact"
	_ = os.Remove(tmp)
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: s.opts.LockTimeout, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return st, fmt.Errorf("compact spool %s: create %s: %w", s.path, tmp, err)
	}
	// Grown in the spool's own steps, so the copy stays under the cap.
	dst.AllocSize = int(allocStep(s.opts.MaxSize))
	if err := bolt.Compact(dst, s.db, 16<<20); err != nil {
		dst.Close()
		os.Remove(tmp)
		return st, fmt.Errorf("compact spool %s: %w", s.path, commitError(s.path, err))
	}
	if err := dst.Close(); err != nil {
		os.Remove(tmp)
		return st, fmt.Errorf("compact spool %s: close %s: %w", s.path, tmp, err)
	}

	s.stopLoop()
	if err := s.db.Close(); err != nil {
		os.Remove(tmp)
		s.closed = true
		return st, fmt.Errorf("compact spool %s: close old file: %w", s.path, err)
	}
	renameErr := os.Rename(tmp, s.path)
	if renameErr == nil {
		syncDir(filepath.Dir(s.path))
	} else {
		os.Remove(tmp)
	}
	db, err := openChecked(s.path, s.opts)
	if err != nil {
		s.closed = true
		return st, fmt.Errorf("compact spool %s: reopen: %w", s.path, err)
	}
	s.db = db
	s.startLoop()
	s.compacted()
	if renameErr != nil {
		return st, fmt.Errorf("compact spool %s: rename: %w", s.path, renameErr)
	}
	if fi, err := os.Stat(s.path); err == nil {
		st.After = fi.Size()
	}
	return st, nil
}

// syncDir makes a rename in dir durable; on systems where directories cannot
// be synced it is a no-op.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// pruneDone drops the body and timeline of the terminal task under done
// key k, keeping a tombstone so its task_no is still refused as a duplicate
// until the dedupe window ends, and returns the task as it was (nil when
// the key names no task).
func pruneDone(tx *bolt.Tx, k []byte) (*Task, error) {
	tasks, done, tombs := tx.Bucket(bucketTasks), tx.Bucket(bucketDone), tx.Bucket(bucketTombs)
	meta, seqs := tx.Bucket(bucketMeta), tx.Bucket(bucketSeq)
	raw := tasks.Get(k[8:])
	if raw == nil {
		return nil, done.Delete(k)
	}
	t, err := decodeTask(raw)
	if err != nil {
		return nil, err
	}
	was := *t
	if err := seqs.Delete(u64(t.Seq)); err != nil {
		return nil, err
	}
	if err := addCount(meta, t.State, -1); err != nil {
		return nil, err
	}
	if !t.Pruned {
		if err := addOrigin(meta, t.Origin, -Charge(t.Size)); err != nil {
			return nil, err
		}
	}
	t.Payload, t.Document, t.Timeline, t.Message, t.Pruned = nil, nil, nil, "", true
	if err := putTask(tx, t); err != nil {
		return nil, err
	}
	if err := tombs.Put(k, nil); err != nil {
		return nil, err
	}
	return &was, done.Delete(k)
}
