package model

// settle trims the spare capacity of fragments that stopped growing since the
// last publication. Appends double a fragment's array, so without this up to
// half of the span memory would sit unused once a rollout is complete. The
// trimmed array is a copy: snapshots already handed out keep the old one.
// Writer goroutine only.
func (w *writer) settle() {
	for _, f := range w.settling {
		if f.dirty || w.fragAt(f.id) != f {
			continue
		}
		if n := len(f.spans); cap(f.spans)-n > n/8+1 {
			f.spans = append(w.slab.make(n), f.spans...)
			f.pub = nil
			if f.roll != nil {
				w.markDirty(f.roll)
			}
		}
	}
	clear(w.settling)
	w.settling = w.settling[:0]
}
