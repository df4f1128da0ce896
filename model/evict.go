package model

// Eviction: whole rollouts, oldest first, to the span and byte bounds.

import (
	"sort"
)

// evict drops whole rollouts, oldest first, until at most target spans and
// targetBytes bytes remain.
func (w *writer) evict(target int, targetBytes int64) {
	w.compactOrder()
	sort.SliceStable(w.order, func(i, j int) bool { return w.order[i].seq < w.order[j].seq })
	n := 0
	for _, r := range w.order {
		if w.stored <= target && w.bytes <= targetBytes {
			break
		}
		for _, f := range r.frags {
			if f == nil {
				continue
			}
			w.locs.prefetch(func(i int) SpanID { return f.spans[i].SpanID }, len(f.spans))
			for i := range f.spans {
				sp := &f.spans[i]
				w.delLoc(sp.TraceID, sp.SpanID, f)
				w.services[sp.Resource]--
				w.bytes -= spanBytes(sp)
			}
			w.stored -= len(f.spans)
			w.evSpans += int64(len(f.spans))
			w.unwait(f)
			f.gone = true
			delete(w.frags, f.id)
			w.nfrags--
			if w.traces[f.trace]--; w.traces[f.trace] <= 0 {
				delete(w.traces, f.trace)
			}
		}
		r.dead = true
		delete(w.rolls, r.key)
		w.evRolls++
		n++
	}
	// Move the survivors to the front: slicing the evicted ones off would
	// leave them (and all their spans) reachable from the array.
	k := copy(w.order, w.order[n:])
	clear(w.order[k:])
	w.order = w.order[:k]
	w.restructure = true
}

// remove deletes id from ids in place: a waiting list is held only by its
// map entry, which takes the result.
func remove(ids []uint32, id uint32) []uint32 {
	for i, x := range ids {
		if x == id {
			n := copy(ids[i:], ids[i+1:])
			return ids[:i+n]
		}
	}
	return ids
}

func (w *writer) compactOrder() {
	live := w.order[:0]
	for _, r := range w.order {
		if !r.dead {
			live = append(live, r)
		}
	}
	clear(w.order[len(live):])
	w.order = live
}
