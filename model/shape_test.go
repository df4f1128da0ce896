package model

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// scaled is n, or a tenth of it under the race detector.
func scaled(n int) int {
	if raceEnabled {
		return n / 10
	}
	return n
}

func numID(n uint64) SpanID {
	var id SpanID
	binary.BigEndian.PutUint64(id[:], n)
	return id
}

// spanKey names a span: its trace and its id.
type spanKey struct {
	trace TraceID
	id    SpanID
}

// sentParents holds the parent id of every span a test sent, by trace and
// span id: what checkFragments holds the stored trees against, as stored
// spans keep no parent id of their own.
type sentParents map[spanKey]SpanID

// add records the parents of b's spans and returns b.
func (s sentParents) add(b Batch) Batch {
	for i := range b.Spans {
		s[spanKey{b.Traces[i], b.Spans[i].SpanID}] = b.ParentOf(i)
	}
	return b
}

// checkFragments checks what Fragment promises: the top first, every other
// span after its parent, every span's parent the one it was sent with, and
// a slot of its own among the snapshot's fragments.
func checkFragments(t *testing.T, s *Snapshot, sent sentParents) {
	t.Helper()
	slots := map[uint32]*Fragment{}
	for _, f := range s.Jobs {
		slots[f.Slot] = f
	}
	for _, r := range s.Rollouts {
		for _, f := range r.Fragments {
			if g, ok := slots[f.Slot]; f.Slot == 0 || ok && g != f {
				t.Fatalf("rollout %s: fragment of version %d has slot %d, taken: %v", r.ID, f.Version, f.Slot, ok)
			}
			slots[f.Slot] = f
			want, ok := sent[spanKey{f.Trace(0), f.Spans[0].SpanID}]
			if !ok {
				t.Fatalf("rollout %s: top span %v was never sent", r.ID, f.Spans[0].SpanID)
			}
			if f.Spans[0].Parent != -1 || f.TopParent != want || f.ParentID(0) != want {
				t.Fatalf("rollout %s: top span has Parent %d, TopParent %v, ParentID %v; sent with parent %v",
					r.ID, f.Spans[0].Parent, f.TopParent, f.ParentID(0), want)
			}
			for i := 1; i < len(f.Spans); i++ {
				if p := f.Spans[i].Parent; p < 0 || int(p) >= i {
					t.Fatalf("rollout %s: span %d has Parent %d", r.ID, i, p)
				}
				want, ok := sent[spanKey{f.Trace(i), f.Spans[i].SpanID}]
				if !ok {
					t.Fatalf("rollout %s: span %d (%v) was never sent", r.ID, i, f.Spans[i].SpanID)
				}
				if f.Spans[f.Spans[i].Parent].SpanID != want || f.ParentID(i) != want {
					t.Fatalf("rollout %s: span %d's Parent index is not its parent", r.ID, i)
				}
			}
		}
	}
}

// TestStoreBigTreesIndependentOfArrivalOrder shuffles trees big enough for
// merges that keep the child's array (swapMin) and for publications between
// them, and checks every order gives the in-order trees.
func TestStoreBigTreesIndependentOfArrivalOrder(t *testing.T) {
	var want string
	for seed := int64(0); seed < 30; seed++ {
		rng := rand.New(rand.NewSource(seed))
		st := NewStore(Options{})
		var ts []tspan
		for tr := 0; tr < 3; tr++ {
			n := 100 + 150*tr
			for i := 0; i < n; i++ {
				x := tspan{name: fmt.Sprintf("t%d-s%d", tr, i), id: fmt.Sprintf("%d-%d", tr, i)}
				if i == 0 {
					x.rid = fmt.Sprintf("r-%d", tr)
				} else {
					// Mostly deep: a parent among the last few spans.
					x.parent = fmt.Sprintf("%d-%d", tr, max(0, i-1-rand.New(rand.NewSource(int64(tr*1000+i))).Intn(4)))
				}
				ts = append(ts, x)
			}
		}
		var trace TraceID
		trace[0] = 9
		spans := build(t, st, trace, ts)
		sent := sentParents{}
		sent.add(spans)
		if seed > 0 {
			rng.Shuffle(len(spans.Spans), spans.swap)
			if seed%3 == 0 { // leaf first
				spans.reverse()
			}
		}
		for len(spans.Spans) > 0 {
			n := min(1+rng.Intn(8), len(spans.Spans))
			if err := st.Add(spans.slice(0, n)); err != nil {
				t.Fatal(err)
			}
			spans = spans.slice(n, len(spans.Spans))
			if rng.Intn(10) == 0 {
				st.Sync() // publish: out-of-order fragments are put in order
				checkFragments(t, st.Snapshot(), sent)
			}
		}
		st.Sync()
		snap := st.Snapshot()
		checkFragments(t, snap, sent)
		checkStats(t, snap)
		got := renderSorted(snap)
		st.Close()
		if seed == 0 {
			want = got
			continue
		}
		if got != want {
			t.Fatalf("seed %d: trees differ from in-order arrival", seed)
		}
	}
}

// TestStoreLeafFirstChain: a chain whose spans arrive leaf first, one per
// batch, used to copy the growing fragment at every span (quadratic).
func TestStoreLeafFirstChain(t *testing.T) {
	n := scaled(30_000)
	st := NewStore(Options{})
	defer st.Close()
	var trace TraceID
	trace[0] = 1
	sent := sentParents{}
	t0 := time.Now()
	for i := n; i >= 1; i-- {
		var parent SpanID
		if i > 1 {
			parent = numID(uint64(i - 1))
		}
		if err := st.Add(sent.add(traced(trace, []Span{{SpanID: numID(uint64(i)), Start: int64(i)}}, parent))); err != nil {
			t.Fatal(err)
		}
	}
	st.Sync()
	el := time.Since(t0)
	snap := st.Snapshot()
	if snap.Stats.Stored != n || snap.Stats.Fragments != 1 || len(snap.Rollouts) != 1 {
		t.Fatalf("stored %d in %d fragments, %d rollouts; want %d in 1, 1", snap.Stats.Stored, snap.Stats.Fragments, len(snap.Rollouts), n)
	}
	checkFragments(t, snap, sent)
	t.Logf("%d-span chain, leaf first, one span per batch: %v", n, el)
	if el > 15*time.Second {
		t.Fatalf("leaf-first chain of %d took %v", n, el)
	}
}

// TestStoreChildrenFirstWide: every child of one rollout's root arrives, in
// batches, before the root. Each batch makes fragments of that rollout; the
// root's arrival merges them all, and detaching each used to scan the
// rollout's list (quadratic).
func TestStoreChildrenFirstWide(t *testing.T) {
	n := scaled(200_000)
	st := NewStore(Options{})
	defer st.Close()
	l := NewLocal(st.Interner())
	var b AttrBuilder
	b.String(l, l.Intern([]byte(RolloutIDKey)), []byte("r-wide"))
	attrs := b.Attrs()
	var trace TraceID
	trace[0] = 2
	sent := sentParents{}
	t0 := time.Now()
	const batch = 500
	for i := 0; i < n; i += batch {
		var spans Batch
		for k := i; k < min(i+batch, n); k++ {
			// Pairs: a grandchild first, then its parent (a child of the root).
			id := uint64(k + 2)
			spans.Append(trace, numID(1), Span{SpanID: numID(id), Attrs: attrs})
		}
		if err := st.Add(sent.add(spans)); err != nil {
			t.Fatal(err)
		}
	}
	st.Sync()
	mid := st.Snapshot()
	if err := st.Add(sent.add(traced(trace, []Span{{SpanID: numID(1), Attrs: attrs}}))); err != nil {
		t.Fatal(err)
	}
	st.Sync()
	el := time.Since(t0)
	snap := st.Snapshot()
	if snap.Stats.Stored != n+1 || snap.Stats.Fragments != 1 || len(snap.Rollouts) != 1 || snap.Rollouts[0].Spans != n+1 {
		t.Fatalf("stored %d in %d fragments, %d rollouts; want %d in 1, 1", snap.Stats.Stored, snap.Stats.Fragments, len(snap.Rollouts), n+1)
	}
	if mid.Stats.Fragments != n {
		t.Errorf("before the root: %d fragments, want one per child (%d)", mid.Stats.Fragments, n)
	}
	checkFragments(t, snap, sent)
	t.Logf("%d children before their root: %v", n, el)
	if el > 15*time.Second {
		t.Fatalf("%d children first took %v", n, el)
	}
}

// TestStoreChildrenFirstEachAlone: every span of many small traces arrives
// alone, leaf first; each trace ends as one fragment.
func TestStoreChildrenFirstEachAlone(t *testing.T) {
	traces, depth := scaled(10_000), 10
	st := NewStore(Options{})
	defer st.Close()
	sent := sentParents{}
	t0 := time.Now()
	for d := depth - 1; d >= 0; d-- {
		var spans Batch
		for tr := 0; tr < traces; tr++ {
			var trace TraceID
			binary.BigEndian.PutUint64(trace[8:], uint64(tr+1))
			var parent SpanID
			if d > 0 {
				parent = numID(uint64(d))
			}
			spans.Append(trace, parent, Span{SpanID: numID(uint64(d + 1))})
		}
		if err := st.Add(sent.add(spans)); err != nil {
			t.Fatal(err)
		}
	}
	st.Sync()
	snap := st.Snapshot()
	if snap.Stats.Stored != traces*depth || snap.Stats.Fragments != traces || snap.Stats.Traces != traces {
		t.Fatalf("stored %d, %d fragments, %d traces; want %d, %d, %d", snap.Stats.Stored, snap.Stats.Fragments, snap.Stats.Traces, traces*depth, traces, traces)
	}
	checkFragments(t, snap, sent)
	t.Logf("%d traces of %d, each level a batch, leaf first: %v", traces, depth, time.Since(t0))
}

// TestStoreSpanIDSharedAcrossTraces: span ids are unique only within a
// trace. Two traces using the same ids are two trees, a retry of either is
// a duplicate, and evicting one leaves the other whole.
func TestStoreSpanIDSharedAcrossTraces(t *testing.T) {
	st := NewStore(Options{MaxSpans: 5})
	defer st.Close()
	sent := sentParents{}
	mk := func(tr byte, rid string) Batch {
		var trace TraceID
		trace[0] = tr
		return sent.add(build(t, st, trace, []tspan{
			{name: "root", id: "a", rid: rid},
			{name: "child", id: "b", parent: "a"},
		}))
	}
	one, two := mk(1, "r-1"), mk(2, "r-2")
	// Children first, so each must find its own trace's parent.
	st.Add(cat(one.pick(1), two.pick(1)))
	st.Add(two.pick(0))
	st.Add(one.pick(0))
	st.Add(cat(one, two)) // retries
	st.Sync()
	s := st.Snapshot()
	if s.Stats.Stored != 4 || s.Stats.Duplicates != 4 || s.Stats.Fragments != 2 || len(s.Rollouts) != 2 {
		t.Fatalf("stored %d, duplicates %d, fragments %d, rollouts %d; want 4, 4, 2, 2\n%s",
			s.Stats.Stored, s.Stats.Duplicates, s.Stats.Fragments, len(s.Rollouts), render(s))
	}
	for _, r := range s.Rollouts {
		if len(r.Fragments) != 1 || r.Spans != 2 || r.Fragments[0].Orphan() {
			t.Fatalf("rollout %s: %d fragments, %d spans, orphan %v", r.ID, len(r.Fragments), r.Spans, r.Fragments[0].Orphan())
		}
	}
	// Past MaxSpans the oldest rollout (r-2, whose root came first) goes;
	// r-1 keeps its spans findable: a retry is still a duplicate.
	three := mk(3, "r-3")
	st.Add(three)
	st.Add(one)
	st.Sync()
	s = st.Snapshot()
	if s.Stats.Duplicates != 6 {
		t.Fatalf("after eviction: %d duplicates, want 6 (trace 1 retried)\n%s", s.Stats.Duplicates, render(s))
	}
	checkFragments(t, s, sent)
	checkStats(t, s)
}

// TestStoreMergeKeepsPublishedSpans: a big fragment whose parent arrives
// keeps its array and takes the parent in (see merge); a snapshot published
// before must not see its top span's Parent change.
func TestStoreMergeKeepsPublishedSpans(t *testing.T) {
	st := NewStore(Options{})
	defer st.Close()
	var trace TraceID
	trace[0] = 7
	sent := sentParents{}
	chain := func(from, to int) Batch {
		var b Batch
		for i := from; i <= to; i++ {
			b.Append(trace, numID(uint64(i-1)), Span{SpanID: numID(uint64(i)), Start: int64(i), End: int64(i + 1)})
		}
		return sent.add(b)
	}
	// 59 spans waiting for span 1, in an array grown by appends (room to spare).
	for _, b := range []Batch{chain(2, 41), chain(42, 60)} {
		if err := st.Add(b); err != nil {
			t.Fatal(err)
		}
		st.Sync()
	}
	old := st.Snapshot()
	if err := st.Add(sent.add(traced(trace, []Span{{SpanID: numID(1), Start: 1, End: 100}}))); err != nil {
		t.Fatal(err)
	}
	st.Sync()
	checkFragments(t, old, sent)
	checkFragments(t, st.Snapshot(), sent)
	if s := st.Snapshot(); len(s.Rollouts) != 1 || s.Rollouts[0].Spans != 60 {
		t.Fatalf("%d rollouts, want one of 60 spans", len(s.Rollouts))
	}
}
