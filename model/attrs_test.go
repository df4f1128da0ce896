package model

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// packAll packs one attribute of every kind, plus a long (inline) string.
func packAll(l *Local, b *AttrBuilder, i int) {
	b.Reset()
	b.String(l, l.Intern([]byte("s")), []byte(fmt.Sprintf("v%d", i%7)))
	b.Int(l.Intern([]byte("neg")), int64(-i))
	b.Int(l.Intern([]byte("big")), math.MaxInt64-int64(i))
	b.Bool(l.Intern([]byte("ok")), i%2 == 0)
	b.Double(l.Intern([]byte("f")), float64(i)+0.5)
	b.String(l, l.Intern([]byte("long")), []byte(strings.Repeat("x", 100)+fmt.Sprint(i)))
	b.Text(l, l.Intern([]byte("arr")), ValArray, []byte(fmt.Sprintf("[%d]", i)))
}

func want(i int) string {
	return fmt.Sprintf("s=v%d neg=%d big=%d ok=%v f=%v long=%s%d arr=[%d] ", i%7, -i, int64(math.MaxInt64-int64(i)), i%2 == 0, float64(i)+0.5, strings.Repeat("x", 100), i, i)
}

func text(t *Interner, a Attrs) string {
	var b strings.Builder
	a.Each(t, func(k string, v Value) bool {
		fmt.Fprintf(&b, "%s=%s ", k, v.String())
		return true
	})
	return b.String()
}

// TestAttrBuilderArena packs many spans' attributes with one builder (the
// decoders' pattern, which carves copies out of shared arenas) and checks
// that every earlier copy still reads back unchanged.
func TestAttrBuilderArena(t *testing.T) {
	st := NewInterner()
	l := NewLocal(st)
	var b AttrBuilder
	var kept []Attrs
	for i := 0; i < 3000; i++ {
		packAll(l, &b, i)
		kept = append(kept, b.Attrs())
	}
	for i, a := range kept {
		if got := text(st, a); got != want(i) {
			t.Fatalf("attrs %d read back as\n%s\nwant\n%s", i, got, want(i))
		}
	}
	var empty AttrBuilder
	if a := empty.Attrs(); !a.Empty() {
		t.Fatalf("empty builder gave %q", a.Text())
	}
}

func TestAttrsEachOf(t *testing.T) {
	st := NewInterner()
	l := NewLocal(st)
	var b AttrBuilder
	packAll(l, &b, 5)
	a := b.Attrs()
	for _, key := range []string{"s", "neg", "big", "ok", "f", "long", "arr"} {
		t.Run(key, func(t *testing.T) {
			k := l.Intern([]byte(key))
			var got []string
			a.eachOf(st, func(x Str) bool { return x == k }, func(x Str, v Value) bool {
				got = append(got, st.Str(x)+"="+v.String())
				return true
			})
			full, _ := a.Get(st, key)
			if len(got) != 1 || got[0] != key+"="+full.String() {
				t.Fatalf("eachOf(%s) = %q, want [%s=%s]", key, got, key, full.String())
			}
		})
	}
}

// TestLocalCache interns strings through a Local whose small cache sees
// many collisions, and checks every id against the shared table.
func TestLocalCache(t *testing.T) {
	st := NewInterner()
	l := NewLocal(st)
	k := l.Intern([]byte("key"))
	for round := 0; round < 3; round++ {
		for i := 0; i < 5000; i++ {
			s := fmt.Sprintf("v%d", i%1500)
			id := l.Intern([]byte(s))
			if got := st.Str(id); got != s {
				t.Fatalf("round %d: Intern(%q) = %d, which is %q", round, s, id, got)
			}
			if vid, ok := l.Value(k, []byte(s)); !ok || vid != id {
				t.Fatalf("round %d: Value(%q) = %d, %v; want %d", round, s, vid, ok, id)
			}
		}
	}
	if id := l.Intern(nil); id != 0 {
		t.Fatalf(`Intern("") = %d, want 0`, id)
	}
}

// TestResourceTableFull: past MaxResources distinct resources, every new
// one reads as the full table's resource, named so; the ones interned
// before keep their ids.
func TestResourceTableFull(t *testing.T) {
	in := NewInterner()
	l := NewLocal(in)
	key := l.Intern([]byte("service.instance.id"))
	var b AttrBuilder
	res := func(i int) Attrs {
		b.Reset()
		b.Int(key, int64(i))
		return b.Sorted(in)
	}
	svc := l.Intern([]byte("svc"))
	first := in.InternResource(res(0), svc)
	for i := 1; i < MaxResources-2; i++ {
		in.InternResource(res(i), svc)
	}
	last := in.InternResource(res(MaxResources-2), svc)
	if first != 1 || last != MaxResources-1 {
		t.Fatalf("ids %d and %d, want 1 and %d", first, last, MaxResources-1)
	}
	over := in.InternResource(res(MaxResources), svc)
	again := in.InternResource(res(MaxResources+1), svc)
	if over != MaxResources || again != MaxResources {
		t.Fatalf("past the table: ids %d and %d, want %d", over, again, MaxResources)
	}
	if got := in.Str(in.Resource(over).Service); got != ResourcesFullName {
		t.Errorf("the full table's resource is named %q", got)
	}
	if id := in.InternResource(res(0), svc); id != first {
		t.Errorf("an interned resource moved: %d, was %d", id, first)
	}
	if n := len(in.Resources()); n != MaxResources+1 {
		t.Errorf("%d resources held, want %d", n, MaxResources+1)
	}
}
