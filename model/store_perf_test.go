package model

import (
	"fmt"
	"math/rand"
	"runtime"
	"slices"
	"testing"
	"time"
)

// batchOf builds spans of one trace from (id, parent) pairs; "" is no parent.
func batchOf(trace byte, pairs ...[2]string) Batch {
	var out Batch
	for _, p := range pairs {
		var parent SpanID
		if p[1] != "" {
			parent = sid(p[1])
		}
		out.Append(TraceID{trace}, parent, Span{SpanID: sid(p[0])})
	}
	return out
}

// prepOrder is the placement order prepare gives a batch.
func prepOrder(b Batch) []int32 {
	t := NewInterner()
	keys := newStoreKeys(t)
	p := &batchPrep{tr: map[TraceID]int32{}}
	p.prepare(b.Spans, b.Traces, b.Parents, t, &keys)
	return p.orderB // by batch index
}

func TestParentsFirst(t *testing.T) {
	cases := []struct {
		name  string
		spans Batch
		want  []int32
	}{
		{"children before parent", batchOf(1, [2]string{"c1", "r"}, [2]string{"c2", "r"}, [2]string{"r", ""}), []int32{2, 0, 1}},
		{"chain reversed", batchOf(1, [2]string{"d", "c"}, [2]string{"c", "b"}, [2]string{"b", "a"}, [2]string{"a", ""}), []int32{3, 2, 1, 0}},
		{"already in order", batchOf(1, [2]string{"a", ""}, [2]string{"b", "a"}, [2]string{"c", "b"}), []int32{0, 1, 2}},
		{"parent not in batch keeps order", batchOf(1, [2]string{"x", "gone"}, [2]string{"y", "gone"}), []int32{0, 1}},
		{"self parent", batchOf(1, [2]string{"s", "s"}, [2]string{"t", "s"}), []int32{0, 1}},
		{"loop of two", batchOf(1, [2]string{"a", "b"}, [2]string{"b", "a"}, [2]string{"c", "a"}), []int32{1, 0, 2}},
		{"same span id in another trace is not a parent", cat(batchOf(1, [2]string{"c", "p"}), batchOf(2, [2]string{"p", ""})), []int32{0, 1}},
		{"same span id in two traces, each its own parent", cat(batchOf(2, [2]string{"p", ""}), batchOf(1, [2]string{"c", "p"}), batchOf(1, [2]string{"p", ""})), []int32{0, 2, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := slices.Clone(prepOrder(tc.spans))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("parentsFirst = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestParentsFirstRandom checks the ordering property on shuffled trees:
// a permutation in which every in-batch parent precedes its children.
func TestParentsFirstRandom(t *testing.T) {
	for seed := int64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewSource(seed))
		n := 1 + rng.Intn(60)
		var b Batch
		for i := 0; i < n; i++ {
			trace := TraceID{byte(1 + rng.Intn(3))}
			var parent SpanID
			if i > 0 && rng.Intn(5) > 0 {
				parent = b.Spans[rng.Intn(i)].SpanID
			}
			b.Append(trace, parent, Span{SpanID: sid(fmt.Sprintf("s%d", i))})
		}
		rng.Shuffle(n, b.swap)
		order := prepOrder(b)
		spans := b.Spans
		pos := make(map[SpanID]int, n)
		seen := make([]bool, n)
		for k, i := range order {
			if seen[i] {
				t.Fatalf("seed %d: index %d twice in %v", seed, i, order)
			}
			seen[i] = true
			pos[spans[i].SpanID] = k
		}
		for i := range spans {
			if !seen[i] {
				t.Fatalf("seed %d: index %d missing from %v", seed, i, order)
			}
			p, ok := pos[b.Parents[i]]
			if ok && !b.Parents[i].IsZero() && b.Traces[order[p]] == b.Traces[i] && p > pos[spans[i].SpanID] {
				t.Fatalf("seed %d: span %d placed before its parent", seed, i)
			}
		}
	}
}

// TestStoreParentLoops feeds spans whose parents form loops: every span must
// still be stored and the counters must agree with the rollouts.
func TestStoreParentLoops(t *testing.T) {
	st := NewStore(Options{})
	defer st.Close()
	spans := batchOf(3, [2]string{"s", "s"}, [2]string{"t", "s"}, [2]string{"a", "b"}, [2]string{"b", "a"})
	if err := st.Add(spans); err != nil {
		t.Fatal(err)
	}
	st.Sync()
	s := st.Snapshot()
	checkStats(t, s)
	if s.Stats.Stored != 4 {
		t.Fatalf("stored %d spans, want 4", s.Stats.Stored)
	}
}

// checkStats recomputes the snapshot's counters from its rollouts.
func checkStats(t *testing.T, s *Snapshot) {
	t.Helper()
	spans, frags := 0, 0
	for i, r := range s.Rollouts {
		n := 0
		for _, f := range r.Fragments {
			n += len(f.Spans)
		}
		if n != r.Spans {
			t.Errorf("rollout %s: Spans=%d, fragments hold %d", r.ID, r.Spans, n)
		}
		spans += n
		frags += len(r.Fragments)
		if i > 0 && r == s.Rollouts[i-1] {
			t.Errorf("rollout %s listed twice", r.ID)
		}
	}
	for _, j := range s.Jobs {
		spans += len(j.Spans)
	}
	if spans != s.Stats.Stored || frags != s.Stats.Fragments || len(s.Rollouts) != s.Stats.Rollouts {
		t.Errorf("stats stored=%d fragments=%d rollouts=%d; rollouts hold %d spans in %d fragments, %d rollouts",
			s.Stats.Stored, s.Stats.Fragments, s.Stats.Rollouts, spans, frags, len(s.Rollouts))
	}
}

// TestStoreIncrementalPublish compares every snapshot published while
// batches arrive (incremental updates, children first, evictions) with one
// rebuilt from scratch by a second store fed the same spans at once.
func TestStoreIncrementalPublish(t *testing.T) {
	for _, maxSpans := range []int{0, 3000} {
		t.Run(fmt.Sprintf("max_spans_%d", maxSpans), func(t *testing.T) {
			st := NewStore(Options{MaxSpans: maxSpans, PublishEvery: time.Microsecond})
			defer st.Close()
			g := newGymGen(st)
			rng := rand.New(rand.NewSource(1))
			var all []Span
			for n := 0; n < 300; n++ {
				spans := g.batch(n, 1+n%3)
				all = append(all, spans.Spans...)
				rng.Shuffle(len(spans.Spans), spans.swap)
				for len(spans.Spans) > 0 {
					k := min(len(spans.Spans), 1+rng.Intn(20))
					if err := st.Add(spans.slice(0, k)); err != nil {
						t.Fatal(err)
					}
					spans = spans.slice(k, len(spans.Spans))
				}
				if n%37 == 0 {
					st.Sync()
					checkStats(t, st.Snapshot())
				}
			}
			st.Sync()
			s := st.Snapshot()
			checkStats(t, s)
			for i := 1; i < len(s.Rollouts); i++ {
				if s.Rollouts[i-1].ID >= s.Rollouts[i].ID {
					t.Fatalf("rollouts out of first-seen order: %s before %s", s.Rollouts[i-1].ID, s.Rollouts[i].ID)
				}
			}
			if maxSpans == 0 {
				ref := NewStore(Options{})
				defer ref.Close()
				// The same spans, interned into the reference store's table.
				rg := newGymGen(ref)
				var same Batch
				for n := 0; n < 300; n++ {
					same = cat(same, rg.batch(n, 1+n%3))
				}
				if len(same.Spans) != len(all) {
					t.Fatalf("reference has %d spans, want %d", len(same.Spans), len(all))
				}
				if err := ref.Add(same); err != nil {
					t.Fatal(err)
				}
				ref.Sync()
				if got, want := renderSorted(s), renderSorted(ref.Snapshot()); got != want {
					t.Fatalf("incremental snapshot differs from a full build:\n%s\nwant\n%s", got, want)
				}
			}
		})
	}
}

// TestStoreNewTraceShortcuts covers the batch-local shortcuts for traces
// the store has not seen: duplicates inside one batch, a span id shared by
// two traces, and parents that arrive in a later batch.
func TestStoreNewTraceShortcuts(t *testing.T) {
	cases := []struct {
		name                string
		batches             []Batch
		stored, dups, frags int
	}{
		{"duplicate inside one batch", []Batch{batchOf(1, [2]string{"c", "r"}, [2]string{"r", ""}, [2]string{"c", "r"})}, 2, 1, 1},
		{"same span id in two new traces", []Batch{cat(batchOf(1, [2]string{"x", ""}), batchOf(2, [2]string{"x", ""}, [2]string{"y", "x"}))}, 3, 0, 2},
		{"parent in a later batch", []Batch{batchOf(1, [2]string{"c", "r"}), batchOf(1, [2]string{"r", ""})}, 2, 0, 1},
		{"duplicate in a later batch", []Batch{batchOf(1, [2]string{"r", ""}), batchOf(1, [2]string{"r", ""}, [2]string{"c", "r"})}, 2, 1, 1},
		// Two traces whose orphans wait for the same parent span id: each
		// parent takes in its own trace's orphan only.
		{"orphans of two traces wait for one span id", []Batch{batchOf(1, [2]string{"c", "p"}), batchOf(2, [2]string{"d", "p"}), batchOf(2, [2]string{"p", ""}), batchOf(1, [2]string{"p", ""})}, 4, 0, 2},
		{"one trace's parent arrives, the other's never", []Batch{batchOf(1, [2]string{"c", "p"}), batchOf(2, [2]string{"d", "p"}), batchOf(2, [2]string{"p", ""})}, 3, 0, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := NewStore(Options{})
			defer st.Close()
			for _, b := range tc.batches {
				if err := st.Add(b); err != nil {
					t.Fatal(err)
				}
			}
			st.Sync()
			s := st.Snapshot()
			checkStats(t, s)
			if s.Stats.Stored != tc.stored || s.Stats.Duplicates != int64(tc.dups) || s.Stats.Fragments != tc.frags {
				t.Fatalf("stored=%d duplicates=%d fragments=%d, want %d, %d, %d",
					s.Stats.Stored, s.Stats.Duplicates, s.Stats.Fragments, tc.stored, tc.dups, tc.frags)
			}
		})
	}
}

// TestStoreEvictionReleasesRollouts checks that an evicted rollout becomes
// garbage: under a steady --max-spans load nothing may keep evicted
// rollouts (and every span under them) reachable.
func TestStoreEvictionReleasesRollouts(t *testing.T) {
	// The last of 64 rollouts triggers the eviction, so no later append can
	// replace the writer's rollout list (and hide a reference it keeps).
	per := len(newGymGen(NewStore(Options{})).rollout(Batch{}, 0, 2).Spans)
	st := NewStore(Options{MaxSpans: 63 * per})
	defer st.Close()
	g := newGymGen(st)
	if err := st.Add(g.batch(0, 2)); err != nil {
		t.Fatal(err)
	}
	st.Sync()
	first := st.w.rolls["r-000000"] // the writer is idle and publication does not write the map
	if first == nil {
		t.Fatal("rollout r-000000 not stored")
	}
	released := make(chan struct{})
	runtime.AddCleanup(first, func(ch chan struct{}) { close(ch) }, released)
	first = nil
	for n := 1; n < 64; n++ {
		if err := st.Add(g.batch(n, 2)); err != nil {
			t.Fatal(err)
		}
	}
	st.Sync()
	if st.Snapshot().Stats.EvictedRollouts == 0 {
		t.Fatal("nothing was evicted")
	}
	for i := 0; i < 10; i++ {
		runtime.GC()
		select {
		case <-released:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatal("the first rollout was evicted but is still reachable")
}

// TestDepthStarts: depths by parent index and the counting sort's starts.
// With a top, only the top is at depth 0: a second root and a cut loop go
// below it, so a reordered fragment keeps its top first.
func TestDepthStarts(t *testing.T) {
	cases := []struct {
		name   string
		parent []int32
		top    int32
		depth  []int32
	}{
		{"chain, children first", []int32{1, 2, -1}, -1, []int32{2, 1, 0}},
		{"two roots, no top", []int32{-1, 0, -1}, -1, []int32{0, 1, 0}},
		{"a second root goes below the top", []int32{-1, 2, -1}, 2, []int32{1, 1, 0}},
		{"a loop is cut where it closes", []int32{1, 0, 0}, -1, []int32{1, 0, 2}},
		{"a loop below a top", []int32{-1, 2, 1}, 0, []int32{0, 2, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var ds depthScratch
			depth, start := ds.depthStarts(tc.parent, tc.top)
			if !slices.Equal(depth, tc.depth) {
				t.Fatalf("depths %v, want %v", depth, tc.depth)
			}
			// start[d] is how many spans are shallower than d.
			for d := range start[:len(start)-1] {
				n := int32(0)
				for _, x := range tc.depth {
					if x < int32(d) {
						n++
					}
				}
				if start[d] != n {
					t.Errorf("start[%d] = %d, want %d", d, start[d], n)
				}
			}
		})
	}
}
