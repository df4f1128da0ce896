package model

import (
	"encoding/binary"
	"math/bits"
)

// spanIndex finds the stored spans of one trace by span id. A trace gets
// one only when a span of it must be looked up (a span of the trace in a
// later batch: a parent to find, a duplicate to tell): a trace that
// arrives whole in one batch, as most do when a process exports a whole
// rollout at once, never pays for one. A slot is a 32-bit tag from the
// id's hash and the 8-byte location, in two arrays: a lookup reads one
// line of 16 tags, linear probing from the line the tag names, and stops at
// the first empty tag, so an absent id usually costs one line. A matching
// tag is confirmed by the caller against the stored span, so the id itself
// is not kept. Deletion shifts entries back instead of leaving tombstones,
// so eviction does not make lookups slower.
type spanIndex struct {
	tags []uint32 // 0: empty; len a multiple of idxLine
	locs []loc
	n    int
}

const (
	idxLine      = 16 // tags per 64-byte line, where probing starts
	idxMinSlots  = 16
	idxMaxLoad16 = 13 // grow past 13/16 full
)

// spanTag mixes the id with a per-store seed (splitmix64's finalizer), so
// chosen ids cannot pile up in one place; the tag also picks the line.
func spanTag(seed uint64, id SpanID) uint32 {
	k := binary.LittleEndian.Uint64(id[:]) ^ seed
	k = (k ^ (k >> 30)) * 0xbf58476d1ce4e5b9
	k = (k ^ (k >> 27)) * 0x94d049bb133111eb
	k ^= k >> 31
	if tag := uint32(k); tag != 0 {
		return tag
	}
	return 1
}

// home is the first slot to probe for tag in a table of slots slots.
func home(tag uint32, slots int) int {
	hi, _ := bits.Mul32(tag, uint32(slots/idxLine))
	return int(hi) * idxLine
}

func (x *spanIndex) Len() int { return x.n }

// find returns the slot holding tag whose location is, says is, the id's,
// or -1.
func (x *spanIndex) find(tag uint32, is func(loc) bool) int {
	if x.n == 0 {
		return -1
	}
	t := x.tags
	for i := home(tag, len(t)); ; {
		switch t[i] {
		case tag:
			if is(x.locs[i]) {
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

// get returns the location of the id of tag; is confirms a candidate
// location holds it.
func (x *spanIndex) get(tag uint32, is func(loc) bool) (loc, bool) {
	if i := x.find(tag, is); i >= 0 {
		return x.locs[i], true
	}
	return loc{}, false
}

// probe returns the slot holding the id (found) or the empty slot where
// it goes, growing the table first so that fill can use that slot: one
// walk over the probe sequence instead of one to look and one to insert.
func (x *spanIndex) probe(tag uint32, is func(loc) bool) (i int, found bool) {
	if (x.n+1)*16 > len(x.tags)*idxMaxLoad16 {
		x.grow()
	}
	t := x.tags
	for i = home(tag, len(t)); ; {
		switch t[i] {
		case tag:
			if is(x.locs[i]) {
				return i, true
			}
		case 0:
			return i, false
		}
		if i++; i == len(t) {
			i = 0
		}
	}
}

// fill puts l in the empty slot i that probe returned.
func (x *spanIndex) fill(i int, tag uint32, l loc) {
	x.tags[i], x.locs[i] = tag, l
	x.n++
}

// set puts or replaces the entry of the id of tag.
func (x *spanIndex) set(tag uint32, l loc, is func(loc) bool) {
	if i, found := x.probe(tag, is); found {
		x.locs[i] = l
	} else {
		x.fill(i, tag, l)
	}
}

// grow rebuilds the table at half full.
func (x *spanIndex) grow() {
	size := max(idxMinSlots, (x.n+1)*2)
	size = (size + idxLine - 1) / idxLine * idxLine
	tags, locs := make([]uint32, size), make([]loc, size)
	for j, tag := range x.tags {
		if tag == 0 {
			continue
		}
		for i := home(tag, size); ; {
			if tags[i] == 0 {
				tags[i], locs[i] = tag, x.locs[j]
				break
			}
			if i++; i == size {
				i = 0
			}
		}
	}
	x.tags, x.locs = tags, locs
}

// del removes the id of tag and reports whether it was there, shifting
// later entries of its run back so that no lookup stops early at the hole.
func (x *spanIndex) del(tag uint32, is func(loc) bool) bool {
	hole := x.find(tag, is)
	if hole < 0 {
		return false
	}
	t, ls := x.tags, x.locs
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
	x.n--
	if x.n == 0 {
		x.tags, x.locs = nil, nil
	}
	return true
}

// touch loads the first line of tag's probe, so that the cache misses of
// a batch overlap instead of coming one at a time.
func (x *spanIndex) touch(tag uint32) uint64 {
	if len(x.tags) == 0 {
		return 0
	}
	h := home(tag, len(x.tags))
	return uint64(x.tags[h]) + uint64(x.locs[h].frag)
}
