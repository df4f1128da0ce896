package receiver

import (
	"bytes"
	"hash/maphash"

	"github.com/nemo-gym/gymtrace/model"
)

// kvCache remembers how recent KeyValue messages packed, by their wire
// bytes. The spans of a run repeat most of their attributes byte for byte
// (the same routes, hosts, status codes, SDK names), so a hit replaces the
// parse, the UTF-8 checks and two interning lookups with one hash and one
// compare. It is direct-mapped: a miss overwrites its slot in place, so a
// stream of unique values costs a copy into reused room, never garbage.
//
// An entry is only made for an attribute that decoded cleanly: nothing cut,
// repaired or dropped, not the truncation marker. Packed values name ids of
// one Interner and were cut under one set of limits, so the cache is
// emptied when either changes.
type kvCache struct {
	slots  []kvSlot
	seed   maphash.Seed
	of     *model.Interner
	name   int // MaxNameLen and MaxValueLen the entries were made under
	value  int
	filled bool
}

type kvSlot struct {
	raw, packed []byte
}

const (
	kvSlots  = 1 << 10
	kvMaxRaw = 256 // longer attributes are rarely repeated and would bloat the slots
)

// bind empties the cache unless it was made for t under lim.
func (c *kvCache) bind(t *model.Interner, lim Limits) {
	if c.slots == nil {
		c.slots = make([]kvSlot, kvSlots)
		c.seed = maphash.MakeSeed()
	}
	if c.of == t && c.name == lim.MaxNameLen && c.value == lim.MaxValueLen {
		return
	}
	if c.filled {
		for i := range c.slots {
			c.slots[i].raw = c.slots[i].raw[:0]
		}
	}
	c.of, c.name, c.value, c.filled = t, lim.MaxNameLen, lim.MaxValueLen, false
}

func (c *kvCache) slot(raw []byte) *kvSlot {
	return &c.slots[maphash.Bytes(c.seed, raw)&(kvSlots-1)]
}

// lookup returns the packed form of raw, or nil.
func (c *kvCache) lookup(raw []byte) []byte {
	if len(raw) > kvMaxRaw || len(raw) == 0 {
		return nil
	}
	s := c.slot(raw)
	if len(s.raw) != len(raw) || !bytes.Equal(s.raw, raw) {
		return nil
	}
	return s.packed
}

// store remembers that raw packs as packed.
func (c *kvCache) store(raw, packed []byte) {
	if len(raw) > kvMaxRaw || len(raw) == 0 {
		return
	}
	s := c.slot(raw)
	s.raw = append(s.raw[:0], raw...)
	s.packed = append(s.packed[:0], packed...)
	c.filled = true
}

// spanAttr adds the span attribute whose KeyValue wire bytes are raw,
// through the cache when it can. It reports whether the attribute was kept.
func (d *decoder) spanAttr(sp *model.Span, raw []byte) (bool, error) {
	if d.attrs.Count() < d.lim.MaxAttrs {
		if p := d.kv.lookup(raw); p != nil {
			d.attrs.AppendPacked(p)
			return true, nil
		}
	}
	before := d.rep
	k, v, err := d.keyValue(raw, 0)
	if err != nil {
		return false, err
	}
	mark := d.attrs.Mark()
	if !d.keepAttr(&d.attrs, sp, k, v, true) {
		return false, nil
	}
	if d.rep == before && k != d.truncKey {
		d.kv.store(raw, d.attrs.Since(mark))
	}
	return true, nil
}
