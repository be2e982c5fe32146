package spool

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestReopenKeepsEverything ensures a closed and reopened spool has every
// task, the seq counter, queue order and the outbox.
func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustAccept(t, s, task("A_v1", "k"))
	mustMove(t, s, "A_v1", StateQueued, Change{})
	s.Close()
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Recovered() != nil {
		t.Fatalf("healthy file reported as recovered: %v", s.Recovered())
	}
	if b := mustAccept(t, s, task("B_v1", "k")); b.Seq != 2 {
		t.Errorf("seq after reopen %d, want 2", b.Seq)
	}
	if q, _ := s.Queue("k"); len(q) != 2 || q[0].State != StateQueued {
		t.Errorf("queue after reopen %v", taskNos(q))
	}
	if d, _ := s.OutboxDepth(); d != 3 {
		t.Errorf("outbox depth %d, want 3", d)
	}
}

// TestOpenRefusesNewerSchema ensures a file from a newer printgate is left
// untouched with a clear error.
func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	s, _ := Open(path, Options{})
	s.Close()
	db, _ := bolt.Open(path, 0o600, nil)
	db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keySchema, u64(SchemaVersion+1)) })
	db.Close()
	before, _ := os.ReadFile(path)
	_, err := Open(path, Options{})
	if !errors.Is(err, ErrSchemaTooNew) || !strings.Contains(err.Error(), "upgrade printgate") {
		t.Fatalf("err %v, want ErrSchemaTooNew with advice", err)
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Error("refused file was modified")
	}
	if m, _ := filepath.Glob(path + ".corrupt-*"); len(m) != 0 {
		t.Errorf("newer-schema file moved aside as corrupt: %v", m)
	}
}

// TestOpenLockedFile ensures a second opener fails with ErrLocked after the
// lock timeout instead of waiting forever.
func TestOpenLockedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = Open(path, Options{LockTimeout: 50 * time.Millisecond})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "another printgate") {
		t.Fatalf("err %v, want ErrLocked", err)
	}
}

// TestOpenCorruptFile ensures a truncated or garbled file is moved aside, a
// fresh spool opens in its place with what could be salvaged, seq carries on
// after the salvaged tasks, and Recovered says so.
func TestOpenCorruptFile(t *testing.T) {
	damage := map[string]func(t *testing.T, path string){
		"truncated": func(t *testing.T, path string) {
			fi, _ := os.Stat(path)
			if err := os.Truncate(path, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		},
		"garbled": func(t *testing.T, path string) {
			b, _ := os.ReadFile(path)
			for i := 4096 * 2; i < len(b); i += 7 {
				b[i] ^= 0x5a
			}
			os.WriteFile(path, b, 0o600)
		},
		"garbled meta": func(t *testing.T, path string) {
			b, _ := os.ReadFile(path)
			for i := 0; i < 8192; i++ {
				b[i] = byte(i * 31)
			}
			os.WriteFile(path, b, 0o600)
		},
		"not a spool": func(t *testing.T, path string) {
			os.WriteFile(path, []byte("hello, this is not a database"), 0o600)
		},
	}
	for name, hurt := range damage {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "spool.db")
			s, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 300; i++ {
				nt := task(seqName(i), "k")
				nt.Payload = make([]byte, 200)
				mustAccept(t, s, nt)
			}
			s.Close()
			hurt(t, path)

			s, err = Open(path, Options{})
			if err != nil {
				t.Fatalf("open damaged: %v", err)
			}
			defer s.Close()
			var ce *CorruptError
			if !errors.As(s.Recovered(), &ce) {
				t.Fatalf("Recovered() = %v, want *CorruptError", s.Recovered())
			}
			if _, err := os.Stat(ce.MovedTo); err != nil || !strings.HasPrefix(ce.MovedTo, path+".corrupt-") {
				t.Errorf("moved-aside file %q: %v", ce.MovedTo, err)
			}
			var salvaged int
			var maxSeq uint64
			for i := 0; i < 300; i++ {
				if got, err := s.Get(seqName(i)); err == nil {
					salvaged++
					maxSeq = max(maxSeq, got.Seq)
				}
			}
			if ce.Salvaged != salvaged {
				t.Errorf("reported %d salvaged, found %d", ce.Salvaged, salvaged)
			}
			if salvaged < 300 && !strings.Contains(ce.Error(), "not printed") {
				t.Errorf("message does not warn about lost tasks: %s", ce)
			}
			if a := mustAccept(t, s, task("NEW_v1", "k")); a.Seq != maxSeq+1 {
				t.Errorf("new task seq %d after salvaging up to seq %d", a.Seq, maxSeq)
			}
			if err := s.Check(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestOpenMissingBucketSalvages ensures a file that passes bbolt's check but
// lost one of the schema's buckets is treated as corrupt and salvaged, not
// opened as it is to fail (or panic) on first use.
func TestOpenMissingBucketSalvages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	mustAccept(t, s, task("A_v1", "k"))
	s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketQueue) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ce *CorruptError
	if !errors.As(s.Recovered(), &ce) || ce.Salvaged != 1 {
		t.Fatalf("Recovered() = %v, want a salvage of 1 task", s.Recovered())
	}
	if q, err := s.Queue("k"); err != nil || len(q) != 1 || q[0].TaskNo != "A_v1" {
		t.Errorf("queue after salvage: %v %v", q, err)
	}
}
