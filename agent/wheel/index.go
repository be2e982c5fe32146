package wheel

import "hash/maphash"

// The key index maps a key to its node's slab index. It is open addressing
// with linear probing over uint32 slots rather than a Go map because a map
// entry costs 16 bytes plus control bytes and slack for a uint64 key, while
// here a slot is 4 bytes and the key lives once, in the node; that is what
// keeps a pending entry within its memory budget.

func (w *Wheel[K, V]) hash(key K) uint64 { return maphash.Comparable(w.seed, key) }

// find returns key's position in the index and its node, or the empty
// position where it would go and 0.
func (w *Wheel[K, V]) find(key K) (pos uint64, node uint32) {
	mask := uint64(len(w.index) - 1)
	pos = w.hash(key) & mask
	for {
		i := w.index[pos]
		if i == 0 || w.nodes[i].key == key {
			return pos, i
		}
		pos = (pos + 1) & mask
	}
}

// insertAt stores node i at the empty position pos found for its key,
// growing the index first if that would fill it past three quarters.
func (w *Wheel[K, V]) insertAt(pos uint64, i uint32) {
	if (w.count+1)*4 > len(w.index)*3 {
		w.grow()
		pos, _ = w.find(w.nodes[i].key)
	}
	w.index[pos] = i
	w.count++
}

func (w *Wheel[K, V]) grow() {
	old := w.index
	w.index = make([]uint32, len(old)*2)
	mask := uint64(len(w.index) - 1)
	for _, i := range old {
		if i == 0 {
			continue
		}
		pos := w.hash(w.nodes[i].key) & mask
		for w.index[pos] != 0 {
			pos = (pos + 1) & mask
		}
		w.index[pos] = i
	}
}

// deleteAt empties position pos and shifts later entries of the probe run
// back, so lookups never need tombstones and a churned index never degrades.
func (w *Wheel[K, V]) deleteAt(pos uint64) {
	mask := uint64(len(w.index) - 1)
	hole := pos
	for j := (pos + 1) & mask; ; j = (j + 1) & mask {
		i := w.index[j]
		if i == 0 {
			break
		}
		home := w.hash(w.nodes[i].key) & mask
		// The entry at j may fill the hole unless its home lies cyclically
		// in (hole, j], where moving it would put it before its home.
		if (j-home)&mask >= (j-hole)&mask {
			w.index[hole] = i
			hole = j
		}
	}
	w.index[hole] = 0
	w.count--
}
