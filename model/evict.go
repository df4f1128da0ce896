package model

// Eviction: whole rollouts, oldest first, to the span and byte bounds.

import (
	"sort"
)

// evict drops whole rollouts, oldest first, until at most target spans and
// targetBytes bytes remain.
func (w *writer) evict(target int, targetBytes int64) {
	w.sortOrder()
	// The oldest rollouts are the front of the published list unless
	// that list is to be rebuilt anyway: then publish drops them from its
	// front instead of walking every rollout.
	front := !w.restructure
	n := 0
	for _, r := range w.order {
		if w.stored <= target && w.bytes <= targetBytes {
			break
		}
		for _, f := range r.slots() {
			if f == nil {
				continue
			}
			indexed := w.recs[f.trec].idx != nil
			for i := range f.spans {
				sp := &f.spans[i]
				if indexed {
					w.delLoc(f, sp.SpanID)
				}
				w.services[sp.Resource]--
				w.bytes -= spanBytes(sp)
			}
			w.stored -= len(f.spans)
			w.evSpans += int64(len(f.spans))
			w.unwait(f)
			w.dropFrag(f)
		}
		r.dead = true
		w.dropRoll(r)
		w.evRolls++
		if r.pos >= 0 {
			if r.pos != w.base+w.evicted {
				front = false
			}
			w.evicted++
		}
		n++
	}
	// Move the survivors to the front: slicing the evicted ones off would
	// leave them (and all their spans) reachable from the array.
	k := copy(w.order, w.order[n:])
	clear(w.order[k:])
	w.order = w.order[:k]
	if !front {
		w.restructure = true
	}
}

// sortOrder drops dead rollouts from order and sorts it by seq, each only
// when needed: both walk every rollout.
func (w *writer) sortOrder() {
	if w.deadInOrder > 0 {
		w.compactOrder()
	}
	if w.unsorted {
		sort.SliceStable(w.order, func(i, j int) bool { return w.order[i].seq < w.order[j].seq })
		w.unsorted = false
	}
}

func (w *writer) compactOrder() {
	w.deadInOrder = 0
	live := w.order[:0]
	for _, r := range w.order {
		if !r.dead {
			live = append(live, r)
		}
	}
	clear(w.order[len(live):])
	w.order = live
}
