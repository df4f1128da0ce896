package model

import (
	"fmt"
	"strings"
	"testing"
)

// TestAttrIter reads every kind of value through the iterator and checks it
// against Each, then looks keys up by id, absent and malformed input included.
func TestAttrIter(t *testing.T) {
	st := NewInterner()
	l := NewLocal(st)
	var b AttrBuilder
	for i := 0; i < 50; i++ {
		packAll(l, &b, i)
		a := b.Attrs()
		var got strings.Builder
		it := a.Iter()
		for it.Next() {
			fmt.Fprintf(&got, "%s=%s ", st.Str(it.Key()), it.Value(st).String())
		}
		if got.String() != text(st, a) {
			t.Fatalf("iterator read\n%s\nEach read\n%s", got.String(), text(st, a))
		}
		for _, k := range []string{"s", "neg", "big", "ok", "f", "long", "arr"} {
			id, ok := st.Lookup(k)
			if !ok {
				t.Fatalf("key %q not interned", k)
			}
			v, found := a.GetKey(st, id)
			w, wfound := a.Get(st, k)
			if found != wfound || v != w || !a.HasKey(id) {
				t.Fatalf("GetKey(%q) = %v %v, Get = %v %v", k, v, found, w, wfound)
			}
		}
	}
	if _, ok := st.Lookup("never-interned"); ok {
		t.Fatal("Lookup found a string never interned")
	}
	if (Attrs{}).HasKey(1) {
		t.Fatal("empty attributes hold a key")
	}
	// Truncated bytes end the walk without a panic.
	packAll(l, &b, 1)
	a := b.Attrs().Text()
	for n := 0; n < len(a); n++ {
		it := packAttrs([]byte(a[:n])).Iter()
		for it.Next() {
			_ = it.Value(st)
		}
	}
}
