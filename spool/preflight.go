package spool

import (
	"fmt"
	"os"
)

// Page flags and meta values of bbolt's file layout that preflight reads
// (go.etcd.io/bbolt/internal/common; the rest is in salvage.go).
const (
	pageFreelist   = 0x10
	boltNoFreelist = ^uint64(0)
)

// preflight reads the meta pages of the bbolt file at path as bolt.Open
// will (the newest valid one) and reports as *corruption a file whose
// pages reach past its end (truncated) or whose freelist page is not one.
// bolt.Open panics on both after it has mapped the file, and the mapping,
// which it returns no handle to unmap, then stays for the life of the
// process: memory on Linux, and on Windows a moved-aside file that cannot
// be deleted while the agent runs. A missing or empty file, or one with no
// valid meta, is left to bolt.Open, which creates it or refuses it without
// a panic.
func preflight(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // bolt.Open creates it, or says why not
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return nil
	}
	bf, m := openBoltFile(f, fi.Size())
	if m == nil {
		return nil // bolt.Open reports ErrInvalid or ErrChecksum
	}
	if m.pgid > bf.pages {
		return &corruption{fmt.Errorf("the file has %d pages but its meta names %d (truncated)", bf.pages, m.pgid)}
	}
	if m.freelist == boltNoFreelist {
		return nil
	}
	if m.freelist >= m.pgid {
		return &corruption{fmt.Errorf("freelist page %d is past the last page %d", m.freelist, m.pgid)}
	}
	h, err := bf.header(m.freelist)
	if err != nil {
		return &corruption{fmt.Errorf("freelist: %w", err)}
	}
	if h.flags&pageFreelist == 0 || h.id != m.freelist {
		return &corruption{fmt.Errorf("freelist page %d is not a freelist (page flags %#x, id %d)", m.freelist, h.flags, h.id)}
	}
	return nil
}
