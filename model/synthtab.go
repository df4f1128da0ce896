package model

import (
	"encoding/binary"
	"math/bits"
)

// synthTable maps synthetic rollout keys to rollouts. Every fragment whose
// parent has not arrived starts one, and eviction ends them as fast, so
// the table churns like nothing else in the store: a Go map keeps a
// tombstone per deletion and its lookups of absent keys (every new
// fragment's) grow longer and longer. Here linear probing with
// backward-shift deletion keeps every probe as short as the fill allows.
type synthTable struct {
	slots []synthSlot // len a power of two; r == nil is empty
	n     int
	seed  uint64
}

type synthSlot struct {
	key synthKey
	r   *roll
}

func (t *synthTable) hash(k synthKey) uint64 {
	x := binary.LittleEndian.Uint64(k.s[:]) ^ uint64(binary.LittleEndian.Uint32(k.t[:]))<<32 ^ t.seed
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31) ^ uint64(binary.LittleEndian.Uint32(k.t[:]))
}

func (t *synthTable) home(k synthKey) int {
	return int(t.hash(k) & uint64(len(t.slots)-1))
}

// Len is the number of keys held.
func (t *synthTable) Len() int { return t.n }

// get returns the rollout of k, or nil.
func (t *synthTable) get(k synthKey) *roll {
	if t.n == 0 {
		return nil
	}
	mask := len(t.slots) - 1
	for i := t.home(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.r == nil {
			return nil
		}
		if s.key == k {
			return s.r
		}
	}
}

// put sets the rollout of k.
func (t *synthTable) put(k synthKey, r *roll) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.resize(max(16, 2*len(t.slots)))
	}
	mask := len(t.slots) - 1
	for i := t.home(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.r == nil {
			*s = synthSlot{k, r}
			t.n++
			return
		}
		if s.key == k {
			s.r = r
			return
		}
	}
}

// del removes k, shifting later entries of its run back so that no probe
// stops early at the hole.
func (t *synthTable) del(k synthKey) {
	if t.n == 0 {
		return
	}
	mask := len(t.slots) - 1
	hole := t.home(k)
	for ; ; hole = (hole + 1) & mask {
		s := &t.slots[hole]
		if s.r == nil {
			return
		}
		if s.key == k {
			break
		}
	}
	for j := hole; ; {
		j = (j + 1) & mask
		if t.slots[j].r == nil {
			break
		}
		// The entry at j may fill the hole unless its home lies
		// cyclically in (hole, j].
		if (j-t.home(t.slots[j].key))&mask >= (j-hole)&mask {
			t.slots[hole] = t.slots[j]
			hole = j
		}
	}
	t.slots[hole] = synthSlot{}
	t.n--
	if t.n*8 < len(t.slots) && len(t.slots) > 64 {
		t.resize(len(t.slots) / 2)
	}
}

func (t *synthTable) resize(size int) {
	size = 1 << bits.Len(uint(size-1))
	old := t.slots
	t.slots = make([]synthSlot, size)
	t.n = 0
	for _, s := range old {
		if s.r != nil {
			t.put(s.key, s.r)
		}
	}
}
