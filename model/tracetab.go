package model

import (
	"encoding/binary"
	"math/bits"
)

// traceTab maps trace ids to their records (writer.recs): open addressing
// over record numbers, 4 bytes a slot, the key read from the record. A Go
// map kept the 16-byte id a second time beside each record, ~35 bytes a
// trace, and a store of many small traces holds one for each: 100k traces
// of telemetrygen at 1M spans. Deletion shifts later entries back (as
// synthTable), so probes stay short while traces come and go.
type traceTab struct {
	slots []uint32 // record numbers, 0: empty; len a power of two
	n     int
	seed  uint64
}

func (t *traceTab) home(id TraceID) int {
	x := binary.LittleEndian.Uint64(id[:8]) ^ bits.RotateLeft64(binary.LittleEndian.Uint64(id[8:]), 29) ^ t.seed
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return int((x ^ (x >> 31)) & uint64(len(t.slots)-1))
}

// Len is the number of traces held.
func (t *traceTab) Len() int { return t.n }

// get returns the record of id, 0 for none.
func (t *traceTab) get(recs []traceRec, id TraceID) uint32 {
	if t.n == 0 {
		return 0
	}
	mask := len(t.slots) - 1
	for i := t.home(id); ; i = (i + 1) & mask {
		r := t.slots[i]
		if r == 0 || recs[r].id == id {
			return r
		}
	}
}

// put records that id's record is r (r > 0, recs[r].id == id); id must
// not be held.
func (t *traceTab) put(recs []traceRec, id TraceID, r uint32) {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.resize(recs, max(16, 2*len(t.slots)))
	}
	mask := len(t.slots) - 1
	i := t.home(id)
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = r
	t.n++
}

// del forgets id, whose record still names it.
func (t *traceTab) del(recs []traceRec, id TraceID) {
	if t.n == 0 {
		return
	}
	mask := len(t.slots) - 1
	hole := t.home(id)
	for ; ; hole = (hole + 1) & mask {
		r := t.slots[hole]
		if r == 0 {
			return
		}
		if recs[r].id == id {
			break
		}
	}
	for j := hole; ; {
		j = (j + 1) & mask
		r := t.slots[j]
		if r == 0 {
			break
		}
		// The entry at j may fill the hole unless its home lies
		// cyclically in (hole, j].
		if (j-t.home(recs[r].id))&mask >= (j-hole)&mask {
			t.slots[hole] = r
			hole = j
		}
	}
	t.slots[hole] = 0
	t.n--
	if t.n*8 < len(t.slots) && len(t.slots) > 64 {
		t.resize(recs, len(t.slots)/2)
	}
}

func (t *traceTab) resize(recs []traceRec, size int) {
	size = 1 << bits.Len(uint(size-1))
	old := t.slots
	t.slots = make([]uint32, size)
	t.n = 0
	mask := size - 1
	for _, r := range old {
		if r != 0 {
			i := t.home(recs[r].id)
			for t.slots[i] != 0 {
				i = (i + 1) & mask
			}
			t.slots[i] = r
			t.n++
		}
	}
}
