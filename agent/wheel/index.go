package wheel

import "hash/maphash"

// The key index maps a key to its node's slab index. It is open addressing
// with linear probing rather than a Go map because a map entry for a uint64
// key costs 16 bytes plus control bytes and slack, and repeats the key that
// the node already holds. Each slot packs 32 bits of the key's hash above the
// node index: probes compare hashes without touching nodes, and deletion can
// shift entries back without rehashing their keys.

const (
	emptySlot = 0 // node 0 is a sentinel, never an entry
	idxMask   = 1<<32 - 1
)

func (w *Wheel[K, V]) hash(key K) uint32 { return uint32(maphash.Comparable(w.seed, key)) }

// find returns key's hash, its position in the index and its node, or the
// empty position where it would go and 0.
func (w *Wheel[K, V]) find(key K) (h uint32, pos uint64, node uint32) {
	h = w.hash(key)
	mask := uint64(len(w.index) - 1)
	for pos = uint64(h) & mask; ; pos = (pos + 1) & mask {
		s := w.index[pos]
		if s == emptySlot {
			return h, pos, 0
		}
		if uint32(s>>32) == h && w.nodes[uint32(s)].key == key {
			return h, pos, uint32(s)
		}
	}
}

// insertAt stores node i, whose key hashes to h, at the empty position pos,
// growing the index first if that would fill it past three quarters.
func (w *Wheel[K, V]) insertAt(h uint32, pos uint64, i uint32) {
	if (w.count+1)*4 > len(w.index)*3 {
		w.grow()
		mask := uint64(len(w.index) - 1)
		for pos = uint64(h) & mask; w.index[pos] != emptySlot; pos = (pos + 1) & mask {
		}
	}
	w.index[pos] = uint64(h)<<32 | uint64(i)
	w.count++
}

func (w *Wheel[K, V]) grow() {
	old := w.index
	w.index = make([]uint64, len(old)*2)
	mask := uint64(len(w.index) - 1)
	for _, s := range old {
		if s == emptySlot {
			continue
		}
		pos := (s >> 32) & mask
		for w.index[pos] != emptySlot {
			pos = (pos + 1) & mask
		}
		w.index[pos] = s
	}
}

// deleteAt empties position pos and shifts later entries of the probe run
// back, so lookups never need tombstones and a churned index never degrades.
func (w *Wheel[K, V]) deleteAt(pos uint64) {
	mask := uint64(len(w.index) - 1)
	hole := pos
	for j := (pos + 1) & mask; ; j = (j + 1) & mask {
		s := w.index[j]
		if s == emptySlot {
			break
		}
		home := (s >> 32) & mask
		// The entry at j may fill the hole unless its home lies cyclically
		// in (hole, j], where moving it would put it before its home.
		if (j-home)&mask >= (j-hole)&mask {
			w.index[hole] = s
			hole = j
		}
	}
	w.index[hole] = emptySlot
	w.count--
}
