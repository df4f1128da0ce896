package model

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
)

// spanIndex maps span ids to where the span lives. It is the writer's
// hottest structure: every stored span is put in once and taken out once,
// at random places in a table of millions, so what matters is cache misses
// and bytes. Go's map costs two or three misses per operation (control
// word, then slot) and 16 bytes a slot. Here a slot is a 32-bit tag from
// the id's hash and the 8-byte location, in two arrays: a lookup reads one
// line of 16 tags, linear probing from the line the tag names, and stops at
// the first empty tag, so an absent id (every new span) usually costs one
// miss. A matching tag is confirmed by the caller against the stored span,
// so the id itself is not kept. Deletion shifts entries back instead of
// leaving tombstones, so eviction does not make lookups slower. The table
// is split in 256 shards that grow on their own: growth is never a pause
// over every span, and the fill of the whole stays near its average (~65%,
// ~18 bytes a span).
type spanIndex struct {
	seed   uint64
	n      int
	shards [idxShards]idxShard
	sink   uint64 // keeps prefetch's loads
}

const (
	idxShards    = 256
	idxLine      = 16 // tags per 64-byte line, where probing starts
	idxMinSlots  = 64
	idxMaxLoad16 = 13 // grow past 13/16 full
)

type idxShard struct {
	tags []uint32 // 0: empty; len a multiple of idxLine
	locs []loc
	n    int
}

func newSpanIndex() *spanIndex {
	return &spanIndex{seed: rand.Uint64()}
}

// hash mixes the id with a per-store seed (splitmix64's finalizer), so
// chosen ids cannot pile up in one place. The top byte picks the shard, the
// low 32 bits are the tag, which also picks the line.
func (x *spanIndex) hash(id SpanID) (shard int, tag uint32) {
	k := binary.LittleEndian.Uint64(id[:]) ^ x.seed
	k = (k ^ (k >> 30)) * 0xbf58476d1ce4e5b9
	k = (k ^ (k >> 27)) * 0x94d049bb133111eb
	k ^= k >> 31
	tag = uint32(k)
	if tag == 0 {
		tag = 1
	}
	return int(k >> 56), tag
}

// home is the first slot to probe for tag in a shard of slots slots.
func home(tag uint32, slots int) int {
	hi, _ := bits.Mul32(tag, uint32(slots/idxLine))
	return int(hi) * idxLine
}

func (x *spanIndex) Len() int { return x.n }

// find returns the slot holding tag whose location is, says is, id's, or
// -1.
func (sh *idxShard) find(tag uint32, is func(loc) bool) int {
	if sh.n == 0 {
		return -1
	}
	t := sh.tags
	for i := home(tag, len(t)); ; {
		switch t[i] {
		case tag:
			if is(sh.locs[i]) {
				return i
			}
		case 0:
			return -1
		}
		if i++; i == len(t) {
			i = 0
		}
	}
}

// get returns the location of id; is confirms a candidate location holds
// id.
func (x *spanIndex) get(id SpanID, is func(loc) bool) (loc, bool) {
	s, tag := x.hash(id)
	sh := &x.shards[s]
	if i := sh.find(tag, is); i >= 0 {
		return sh.locs[i], true
	}
	return loc{}, false
}

// set puts or replaces the entry of id.
func (x *spanIndex) set(id SpanID, l loc, is func(loc) bool) {
	s, tag := x.hash(id)
	sh := &x.shards[s]
	if i := sh.find(tag, is); i >= 0 {
		sh.locs[i] = l
		return
	}
	if (sh.n+1)*16 > len(sh.tags)*idxMaxLoad16 {
		sh.grow()
	}
	t := sh.tags
	for i := home(tag, len(t)); ; {
		if t[i] == 0 {
			t[i], sh.locs[i] = tag, l
			sh.n++
			x.n++
			return
		}
		if i++; i == len(t) {
			i = 0
		}
	}
}

// probe returns the slot holding id (found) or the empty slot where id
// goes, growing the shard first so that fill can use that slot: one walk
// over the probe sequence instead of one to look and one to insert.
func (x *spanIndex) probe(id SpanID, is func(loc) bool) (sh *idxShard, i int, tag uint32, found bool) {
	s, tag := x.hash(id)
	sh = &x.shards[s]
	if (sh.n+1)*16 > len(sh.tags)*idxMaxLoad16 {
		sh.grow()
	}
	t := sh.tags
	for i = home(tag, len(t)); ; {
		switch t[i] {
		case tag:
			if is(sh.locs[i]) {
				return sh, i, tag, true
			}
		case 0:
			return sh, i, tag, false
		}
		if i++; i == len(t) {
			i = 0
		}
	}
}

// fill puts l in the empty slot i of sh that probe returned.
func (x *spanIndex) fill(sh *idxShard, i int, tag uint32, l loc) {
	sh.tags[i], sh.locs[i] = tag, l
	sh.n++
	x.n++
}

// grow rebuilds sh at half full.
func (sh *idxShard) grow() {
	size := max(idxMinSlots, (sh.n+1)*2)
	size = (size + idxLine - 1) / idxLine * idxLine
	tags, locs := make([]uint32, size), make([]loc, size)
	for j, tag := range sh.tags {
		if tag == 0 {
			continue
		}
		for i := home(tag, size); ; {
			if tags[i] == 0 {
				tags[i], locs[i] = tag, sh.locs[j]
				break
			}
			if i++; i == size {
				i = 0
			}
		}
	}
	sh.tags, sh.locs = tags, locs
}

// del removes id and reports whether it was there, shifting later entries
// of its run back so that no lookup stops early at the hole.
func (x *spanIndex) del(id SpanID, is func(loc) bool) bool {
	s, tag := x.hash(id)
	sh := &x.shards[s]
	hole := sh.find(tag, is)
	if hole < 0 {
		return false
	}
	t, ls := sh.tags, sh.locs
	n := len(t)
	for j := hole; ; {
		if j++; j == n {
			j = 0
		}
		if t[j] == 0 {
			break
		}
		// The entry at j may fill the hole unless its home lies
		// cyclically in (hole, j]: it would then sit before its home.
		hm := home(t[j], n)
		if (j > hole && (hm <= hole || hm > j)) || (j < hole && hm <= hole && hm > j) {
			t[hole], ls[hole] = t[j], ls[j]
			hole = j
		}
	}
	t[hole], ls[hole] = 0, loc{}
	sh.n--
	x.n--
	if sh.n == 0 {
		sh.tags, sh.locs = nil, nil
	}
	return true
}

// prefetch touches the first line of each id's probe, so that the cache
// misses of a batch overlap instead of coming one at a time.
func (x *spanIndex) prefetch(ids func(i int) SpanID, n int) {
	var sum uint64
	for i := range n {
		s, tag := x.hash(ids(i))
		sh := &x.shards[s]
		if len(sh.tags) > 0 {
			h := home(tag, len(sh.tags))
			sum += uint64(sh.tags[h]) + uint64(sh.locs[h].frag)
		}
	}
	x.sink = sum
}
