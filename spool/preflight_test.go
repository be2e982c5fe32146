package spool

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPreflight ensures preflight passes a healthy spool, a missing and an
// empty file (bolt.Open's to create), and reports the damage bolt.Open
// would panic on, after mapping the file, as corruption: a truncated file
// and a freelist page that is not one.
func TestPreflight(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "spool.db")
	if err := preflight(path); err != nil {
		t.Fatalf("missing file: %v", err)
	}
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
	if err := preflight(path); err != nil {
		t.Fatalf("healthy spool: %v", err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bf, m := openBoltFile(strings.NewReader(string(good)), int64(len(good)))
	if m == nil || m.freelist == boltNoFreelist {
		t.Fatalf("no meta or no freelist in a healthy spool: %+v", m)
	}

	damaged := map[string][]byte{
		"truncated": good[:len(good)/2],
		"freelist page zeroed": func() []byte {
			b := append([]byte(nil), good...)
			off := int(m.freelist) * int(bf.pageSize)
			clear(b[off : off+pageHeaderSize])
			return b
		}(),
	}
	for name, b := range damaged {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		var ce *corruption
		if err := preflight(path); !errors.As(err, &ce) {
			t.Errorf("%s: preflight = %v, want *corruption", name, err)
		}
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := preflight(path); err != nil {
		t.Errorf("empty file: %v", err)
	}
}
