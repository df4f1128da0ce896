package model

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
)

// spanIndex maps span ids to where the span lives. It is the writer's
// hottest structure: every stored span is put in once and taken out once,
// at random places in a table of millions, so what matters is cache misses.
// Go's map costs two or three per operation (control word, then slot); here
// a lookup starts at the first of four 16-byte slots sharing a cache line
// and ends at the first empty slot (linear probing), so one miss usually
// answers. Deletion shifts entries back instead of leaving tombstones, so
// eviction does not make lookups slower. The table is split in 256 shards
// that grow on their own: growth is never a pause over every span, and the
// fill of the whole stays near its average (~65%, ~25 bytes a span).
type spanIndex struct {
	seed   uint64
	n      int
	shards [idxShards]idxShard
	// The zero id marks an empty slot, so a span with it is kept apart.
	hasZero bool
	zero    loc
	sink    uint64 // keeps prefetch's loads
}

const (
	idxShards    = 256
	idxLine      = 4 // slots per 64-byte line, where probing starts
	idxMinSlots  = 64
	idxMaxLoad16 = 13 // grow past 13/16 full
)

type idxSlot struct {
	key uint64
	loc loc
}

type idxShard struct {
	slots []idxSlot // len a multiple of idxLine
	n     int
}

func newSpanIndex() *spanIndex {
	return &spanIndex{seed: rand.Uint64()}
}

// hash mixes the id with a per-store seed (splitmix64's finalizer), so
// chosen ids cannot pile up in one place.
func (x *spanIndex) hash(k uint64) uint64 {
	k ^= x.seed
	k = (k ^ (k >> 30)) * 0xbf58476d1ce4e5b9
	k = (k ^ (k >> 27)) * 0x94d049bb133111eb
	return k ^ (k >> 31)
}

// home is the first slot to probe for hash h in a shard of len(slots).
func home(h uint64, slots int) int {
	hi, _ := bits.Mul64(h<<8, uint64(slots/idxLine))
	return int(hi) * idxLine
}

func key(id SpanID) uint64 { return binary.LittleEndian.Uint64(id[:]) }

func (x *spanIndex) Len() int { return x.n }

// find returns the slot of k in sh, or -1.
func (sh *idxShard) find(k, h uint64) int {
	if sh.n == 0 {
		return -1
	}
	s := sh.slots
	for i := home(h, len(s)); ; {
		switch s[i].key {
		case k:
			return i
		case 0:
			return -1
		}
		if i++; i == len(s) {
			i = 0
		}
	}
}

func (x *spanIndex) get(id SpanID) (loc, bool) {
	k := key(id)
	if k == 0 {
		if !x.hasZero {
			return loc{}, false
		}
		return x.zero, true
	}
	h := x.hash(k)
	sh := &x.shards[h>>56]
	if i := sh.find(k, h); i >= 0 {
		return sh.slots[i].loc, true
	}
	return loc{}, false
}

// set puts or replaces the entry of id.
func (x *spanIndex) set(id SpanID, l loc) {
	k := key(id)
	if k == 0 {
		if !x.hasZero {
			x.n++
		}
		x.hasZero, x.zero = true, l
		return
	}
	h := x.hash(k)
	sh := &x.shards[h>>56]
	if (sh.n+1)*16 > len(sh.slots)*idxMaxLoad16 {
		x.grow(sh)
	}
	s := sh.slots
	for i := home(h, len(s)); ; {
		switch s[i].key {
		case k:
			s[i].loc = l
			return
		case 0:
			s[i] = idxSlot{k, l}
			sh.n++
			x.n++
			return
		}
		if i++; i == len(s) {
			i = 0
		}
	}
}

// grow rebuilds sh at half full.
func (x *spanIndex) grow(sh *idxShard) {
	size := max(idxMinSlots, (sh.n+1)*2)
	size = (size + idxLine - 1) / idxLine * idxLine
	old := sh.slots
	s := make([]idxSlot, size)
	for _, e := range old {
		if e.key == 0 {
			continue
		}
		for i := home(x.hash(e.key), size); ; {
			if s[i].key == 0 {
				s[i] = e
				break
			}
			if i++; i == size {
				i = 0
			}
		}
	}
	sh.slots = s
}

// del removes id, shifting later entries of its run back so that no
// lookup stops early at the hole.
func (x *spanIndex) del(id SpanID) {
	k := key(id)
	if k == 0 {
		if x.hasZero {
			x.n--
		}
		x.hasZero, x.zero = false, loc{}
		return
	}
	h := x.hash(k)
	sh := &x.shards[h>>56]
	hole := sh.find(k, h)
	if hole < 0 {
		return
	}
	s := sh.slots
	n := len(s)
	for j := hole; ; {
		if j++; j == n {
			j = 0
		}
		if s[j].key == 0 {
			break
		}
		// The entry at j may fill the hole unless its home lies
		// cyclically in (hole, j]: it would then sit before its home.
		hm := home(x.hash(s[j].key), n)
		if (j > hole && (hm <= hole || hm > j)) || (j < hole && hm <= hole && hm > j) {
			s[hole] = s[j]
			hole = j
		}
	}
	s[hole] = idxSlot{}
	sh.n--
	x.n--
	if sh.n == 0 {
		sh.slots = nil
	}
}

// prefetch touches the first slot of each id's probe, so that the cache
// misses of a batch overlap instead of coming one at a time.
func (x *spanIndex) prefetch(ids func(i int) SpanID, n int) {
	var sum uint64
	for i := range n {
		k := key(ids(i))
		h := x.hash(k)
		sh := &x.shards[h>>56]
		if len(sh.slots) > 0 {
			sum += sh.slots[home(h, len(sh.slots))].key
		}
	}
	x.sink = sum
}
