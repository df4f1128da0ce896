package model

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestStoreEvictsWholeOldestRollouts(t *testing.T) {
	st := NewStore(Options{MaxSpans: 1000})
	defer st.Close()
	g := newGymGen(st)
	per := len(g.rollout(Batch{}, 0, 3).Spans)
	for n := 0; n < 100; n++ {
		if err := st.Add(g.batch(n, 3)); err != nil {
			t.Fatal(err)
		}
	}
	st.Sync()
	s := st.Snapshot()
	if s.Stats.Stored > 1000 {
		t.Fatalf("stored %d spans, bound is 1000", s.Stats.Stored)
	}
	if s.Stats.EvictedRollouts == 0 || s.Stats.EvictedSpans != s.Stats.EvictedRollouts*int64(per) {
		t.Fatalf("evicted %d spans in %d rollouts, want whole rollouts of %d spans", s.Stats.EvictedSpans, s.Stats.EvictedRollouts, per)
	}
	if got := int64(s.Stats.Stored) + s.Stats.EvictedSpans; got != int64(100*per) {
		t.Fatalf("stored+evicted = %d, want %d", got, 100*per)
	}
	for _, r := range s.Rollouts {
		if r.Spans != per || len(r.Fragments) != 1 {
			t.Errorf("rollout %s: %d spans in %d fragments, want %d in 1", r.ID, r.Spans, len(r.Fragments), per)
		}
	}
	if last := s.Rollouts[len(s.Rollouts)-1].ID; last != "r-000099" {
		t.Errorf("newest rollout %s was evicted or misordered", last)
	}
	var services int64
	for _, n := range s.Services {
		services += n
	}
	if services != int64(s.Stats.Stored) {
		t.Errorf("per-service counts sum to %d, stored %d", services, s.Stats.Stored)
	}
}

func TestStoreRolloutIDFromPath(t *testing.T) {
	st := NewStore(Options{})
	defer st.Close()
	l := NewLocal(st.Interner())
	var b AttrBuilder
	b.String(l, l.Intern([]byte("http.target")), []byte("/ng-rollout/abc-7/verify?x=1"))
	var trace TraceID
	trace[0] = 1
	if err := st.Add(traced(trace, []Span{{SpanID: sid("a"), Name: l.Intern([]byte("POST /verify")), Kind: KindServer, Attrs: b.Attrs()}})); err != nil {
		t.Fatal(err)
	}
	st.Sync()
	if got := st.Snapshot().Rollouts[0]; got.ID != "abc-7" || got.Synthetic {
		t.Fatalf("rollout id = %q (synthetic %v), want abc-7", got.ID, got.Synthetic)
	}
}

func TestStoreDuplicatesAndPending(t *testing.T) {
	now := time.Unix(100, 0)
	st := NewStore(Options{Now: func() time.Time { return now }})
	defer st.Close()
	var trace TraceID
	trace[0] = 9
	spans := build(t, st, trace, jobTree[1:4]) // no job span: c1 waits for it
	st.Add(spans)
	st.Add(spans.slice(0, 1))
	st.Sync()
	s := st.Snapshot()
	if s.Stats.Duplicates != 1 || s.Stats.Stored != 3 {
		t.Fatalf("duplicates=%d stored=%d, want 1 and 3", s.Stats.Duplicates, s.Stats.Stored)
	}
	f := s.Rollouts[0].Fragments[0]
	if !f.Orphan() {
		t.Fatalf("fragment waiting for gym.job should be an orphan until it arrives")
	}
	if s.Rollouts[0].LastSeen != now.UnixNano() {
		t.Fatalf("LastSeen = %v, want the store clock %v", s.Rollouts[0].LastSeen, now)
	}
	st.Add(build(t, st, trace, jobTree[:1]))
	st.Sync()
	s = st.Snapshot()
	if f := s.Rollouts[0].Fragments[0]; f.Orphan() || f.Job() != sid("job") || len(s.Jobs) != 1 {
		t.Fatalf("after gym.job arrived: orphan=%v job=%v jobs=%d", f.Orphan(), f.Job(), len(s.Jobs))
	}
}

// TestStoreWriterAndReaders runs one writer against readers that walk every
// span of every snapshot; under -race it proves snapshots are immutable.
func TestStoreWriterAndReaders(t *testing.T) {
	st := NewStore(Options{MaxSpans: 20000, PublishEvery: time.Millisecond})
	g := newGymGen(st)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s := st.Snapshot()
				n := 0
				for _, ro := range s.Rollouts {
					for _, f := range ro.Fragments {
						for i := range f.Spans {
							sp := &f.Spans[i]
							if sp.Parent >= int32(len(f.Spans)) {
								t.Errorf("parent index %d out of range", sp.Parent)
								return
							}
							_ = s.Str(sp.Name)
							sp.Attrs.Each(s.Interner(), func(string, Value) bool { n++; return true })
						}
					}
				}
				runtime.Gosched()
			}
		}()
	}
	sent := 0
	for n := 0; n < 600; n++ {
		spans := g.batch(n, 2)
		spans.reverse() // children first: the worst arrival order
		sent += len(spans.Spans)
		if err := st.Add(spans); err != nil {
			t.Fatal(err)
		}
	}
	st.Sync()
	close(stop)
	wg.Wait()
	s := st.Snapshot()
	st.Close()
	if int64(s.Stats.Stored)+s.Stats.EvictedSpans != int64(sent) {
		t.Fatalf("stored %d + evicted %d != sent %d", s.Stats.Stored, s.Stats.EvictedSpans, sent)
	}
	for _, r := range s.Rollouts {
		if len(r.Fragments) != 1 {
			t.Fatalf("rollout %s has %d fragments after every parent arrived", r.ID, len(r.Fragments))
		}
	}
}

// A rollout id written like a synthetic key names the same rollout as that
// key, as when both were one text; the parsed form round-trips only for
// the exact lower-case form.
func TestSynthKeyText(t *testing.T) {
	var tr TraceID
	copy(tr[:], []byte{0x0a, 0x1b, 0x2c, 0x3d, 9, 9})
	k := synthKeyOf(tr, numID(0xfe))
	s := k.String()
	if s != "~0a1b2c3d/00000000000000fe" {
		t.Fatalf("String() = %q", s)
	}
	if got, ok := parseSynthKey(s); !ok || got != k {
		t.Fatalf("parseSynthKey(%q) = %v, %v", s, got, ok)
	}
	for _, bad := range []string{"~0A1B2C3D/00000000000000fe", "~0a1b2c3d-00000000000000fe", "0a1b2c3d/00000000000000fe0", "~0a1b2c3d/00000000000000f"} {
		if _, ok := parseSynthKey(bad); ok {
			t.Errorf("parseSynthKey(%q) accepted", bad)
		}
	}
	st := NewStore(Options{})
	defer st.Close()
	l := NewLocal(st.Interner())
	var b AttrBuilder
	b.String(l, l.Intern([]byte(RolloutIDKey)), []byte(s))
	var both Batch
	both.Append(tr, SpanID{}, Span{SpanID: numID(0xfe)})                        // synthetic key s
	both.Append(TraceID{1}, SpanID{}, Span{SpanID: numID(1), Attrs: b.Attrs()}) // rollout id s
	if err := st.Add(both); err != nil {
		t.Fatal(err)
	}
	st.Sync()
	snap := st.Snapshot()
	if len(snap.Rollouts) != 1 || snap.Rollouts[0].ID != s || len(snap.Rollouts[0].Fragments) != 2 {
		t.Fatalf("want one rollout %q of two fragments, got %d rollouts", s, len(snap.Rollouts))
	}
}

// TestStoreOrphansBoundedAndEvicted sends batches whose tops wait for
// parents that never come (each batch a new trace, as an agent's batch is
// when its callers' batches are lost): a trace's waiting fragments are one
// rollout, evicted oldest first under MaxSpans as any other, and every
// table the writer keeps for them stays within the spans held. A parent
// arriving for a held orphan joins it; one arriving for an evicted orphan
// finds nothing.
func TestStoreOrphansBoundedAndEvicted(t *testing.T) {
	const maxSpans = 5_000
	st := NewStore(Options{MaxSpans: maxSpans, PublishEvery: time.Hour})
	defer st.Close()
	mk := func(k int) Batch {
		var trace TraceID // random-looking, as W3C ids are
		binary.BigEndian.PutUint64(trace[:], uint64(k+1)*0x9e3779b97f4a7c15)
		var spans Batch
		id := func(o, n int) SpanID { return numID(uint64(k*10_000+1000*o+n) * 0xbf58476d1ce4e5b9) }
		for o := 0; o < 10; o++ { // ten orphans of three spans, children first
			top := id(o, 1)
			spans.Append(trace, top, Span{SpanID: id(o, 2)})
			spans.Append(trace, top, Span{SpanID: id(o, 3)})
			spans.Append(trace, id(o, 999), Span{SpanID: top}) // never sent
		}
		return spans
	}
	const batches = 2_000
	for k := 0; k < batches; k++ {
		if err := st.Add(mk(k)); err != nil {
			t.Fatal(err)
		}
	}
	st.Sync()
	s := st.Snapshot().Stats
	if s.Stored > maxSpans || s.Stored+int(s.EvictedSpans) != 30*batches {
		t.Fatalf("stored %d (bound %d) + evicted %d != %d sent", s.Stored, maxSpans, s.EvictedSpans, 30*batches)
	}
	if s.Fragments != s.Stored/3 || s.Rollouts != s.Traces || s.Traces != s.Stored/30 {
		t.Fatalf("%d rollouts, %d fragments, %d traces for %d orphan spans: want a fragment per three spans, a rollout per trace of thirty",
			s.Rollouts, s.Fragments, s.Traces, s.Stored)
	}
	w := &st.w
	waiting := 0
	for _, wl := range w.waiting {
		for id := wl.head; id != 0; id = w.tab[id].waitNext {
			waiting++
		}
	}
	if waiting != s.Fragments || len(w.waiting) != s.Fragments {
		t.Errorf("%d fragments listed as waiting under %d ids, want %d", waiting, len(w.waiting), s.Fragments)
	}
	if len(w.tab) > 2*s.Fragments+64 || w.traces.Len() != s.Traces || len(w.rolls)+w.synth.Len() != s.Rollouts {
		t.Errorf("tables: %d fragment slots, %d traces (%d held), %d rollout keys (%d held)",
			len(w.tab), w.traces.Len(), s.Traces, len(w.rolls)+w.synth.Len(), s.Rollouts)
	}
	// The last batch's first orphan is held: its parent joins it. The
	// first batch's were evicted: their parent starts a fragment alone.
	lastB, firstB := mk(batches-1), mk(0)
	last, first := lastB.Traces[0], firstB.Traces[0]
	var parents Batch
	parents.Append(last, SpanID{}, Span{SpanID: lastB.Parents[2]})
	parents.Append(first, SpanID{}, Span{SpanID: firstB.Parents[2]})
	if err := st.Add(parents); err != nil {
		t.Fatal(err)
	}
	st.Sync()
	found := map[TraceID]int{}
	for _, r := range st.Snapshot().Rollouts {
		for _, f := range r.Fragments {
			if id := f.Spans[0].SpanID; id == lastB.Parents[2] || id == firstB.Parents[2] {
				found[f.TraceID] = len(f.Spans)
			}
		}
	}
	if found[last] != 4 || found[first] != 1 {
		t.Errorf("late parents: %d spans with the held orphan (want 4), %d with the evicted one (want 1)", found[last], found[first])
	}
}

// TestSnapshotsStayAsPublished: a snapshot's rollout list is never changed
// by later publications (rollouts added, changed, or evicted from the front
// of the list), and each new list holds exactly the rollouts held.
func TestSnapshotsStayAsPublished(t *testing.T) {
	st := NewStore(Options{MaxSpans: 3_000, PublishEvery: time.Hour})
	defer st.Close()
	g := newGymGen(st)
	type kept struct {
		snap *Snapshot
		list []*Rollout
	}
	var old []kept
	for n := 0; n < 300; n++ {
		spans := g.batch(n, 1+n%5)
		if k := len(spans.Spans); n%7 == 3 && k > 2 { // some rollouts arrive in two batches: changed once listed
			if err := st.Add(spans.slice(0, k/2)); err != nil {
				t.Fatal(err)
			}
			st.Sync()
			s := st.Snapshot()
			old = append(old, kept{s, append([]*Rollout(nil), s.Rollouts...)})
			spans = spans.slice(k/2, k)
		}
		if err := st.Add(spans); err != nil {
			t.Fatal(err)
		}
		st.Sync()
		s := st.Snapshot()
		old = append(old, kept{s, append([]*Rollout(nil), s.Rollouts...)})
		held := 0
		for _, r := range s.Rollouts {
			held += r.Spans
		}
		for _, j := range s.Jobs {
			held += len(j.Spans)
		}
		if held != s.Stats.Stored {
			t.Fatalf("after rollout %d: the list holds %d spans, the store %d", n, held, s.Stats.Stored)
		}
	}
	for i, k := range old {
		if len(k.snap.Rollouts) != len(k.list) {
			t.Fatalf("snapshot %d: %d rollouts, published with %d", i, len(k.snap.Rollouts), len(k.list))
		}
		for j := range k.list {
			if k.snap.Rollouts[j] != k.list[j] {
				t.Fatalf("snapshot %d: rollout %d replaced after publication", i, j)
			}
		}
	}
	if s := st.Snapshot().Stats; s.EvictedRollouts == 0 {
		t.Fatal("nothing was evicted")
	}
}

// TestWaitingFragmentsShareTheirTracesRollout: fragments without a rollout
// id whose tops wait for a parent are one rollout per trace (a trace whose
// id begins alike has its own); one leaves it for a rollout of its own once
// its top has no parent to wait for: its parent came as a root, or it came
// as the gym.job span. Each is seen when it got spans, not when others of
// its trace did.
func TestWaitingFragmentsShareTheirTracesRollout(t *testing.T) {
	var mu sync.Mutex
	clock := time.Unix(1000, 0)
	st := NewStore(Options{PublishEvery: time.Hour, Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }})
	defer st.Close()
	tick := func() { mu.Lock(); clock = clock.Add(time.Second); mu.Unlock() }
	t1, t2 := TraceID{1, 2, 3, 4, 5}, TraceID{1, 2, 3, 4, 6}
	pa, pb := numID(0xa0), numID(0xb0)
	var b Batch
	b.Append(t1, pa, Span{SpanID: numID(0xa1)})
	b.Append(t1, numID(0xa1), Span{SpanID: numID(0xa2)})
	b.Append(t1, SpanID{}, Span{SpanID: numID(0xc1)}) // a root: its own rollout
	b.Append(t2, numID(0xd0), Span{SpanID: numID(0xd1)})
	if err := st.Add(b); err != nil {
		t.Fatal(err)
	}
	st.Sync()
	tick()
	b = traced(t1, []Span{{SpanID: numID(0xb1)}}, pb)
	// Rollouts by the tops of their fragments, sorted.
	tops := func() []string {
		st.Sync()
		var out []string
		for _, r := range st.Snapshot().Rollouts {
			var ids []string
			for _, f := range r.Fragments {
				ids = append(ids, fmt.Sprintf("%x", f.Spans[0].SpanID[7]))
			}
			sort.Strings(ids)
			out = append(out, strings.Join(ids, "+"))
		}
		sort.Strings(out)
		return out
	}
	for _, step := range []struct {
		what string
		add  func() Batch
		want string
	}{
		{"orphans of one trace", func() Batch { return b }, "a1+b1 c1 d1"},
		{"a child of a1, later", func() Batch { tick(); return traced(t1, []Span{{SpanID: numID(0xa3)}}, numID(0xa1)) }, "a1+b1 c1 d1"},
		{"a root parent", func() Batch { return traced(t1, []Span{{SpanID: pa}}) }, "a0 b1 c1 d1"},
		{"the job as parent", func() Batch { return traced(t1, []Span{{SpanID: pb, Name: st.Interner().Intern(JobSpanName)}}) }, "a0 b1 c1 d1"},
	} {
		if err := st.Add(step.add()); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(tops(), " "); got != step.want {
			t.Errorf("%s: rollouts %q, want %q", step.what, got, step.want)
		}
		if step.what != "a child of a1, later" {
			continue
		}
		// a1 came at 1000 s and got a child at 1002, b1 came at 1001.
		for _, r := range st.Snapshot().Rollouts {
			for i, f := range r.Fragments {
				first, last := r.Seen(i)
				want := map[byte][2]int64{0xa1: {1000, 1002}, 0xb1: {1001, 1001}, 0xc1: {1000, 1000}, 0xd1: {1000, 1000}}[f.Spans[0].SpanID[7]]
				if first != want[0]*1e9 || last != want[1]*1e9 {
					t.Errorf("%x seen %d..%d s, want %d..%d", f.Spans[0].SpanID[7], first/1e9, last/1e9, want[0], want[1])
				}
				if cf, cl := r.Clone().Seen(i); cf != first || cl != last {
					t.Errorf("%x: a clone sees it %d..%d, the rollout %d..%d", f.Spans[0].SpanID[7], cf, cl, first, last)
				}
			}
		}
	}
	// b1 left the waiting rollout for its own: it no longer waits.
	for _, r := range st.Snapshot().Rollouts {
		if f := r.Fragments[0]; f.Spans[0].SpanID == numID(0xb1) && (len(r.Fragments) != 1 || f.Job() != pb || f.Orphan()) {
			t.Errorf("b1: %d fragments, job %x, orphan %v: want its own rollout under the job", len(r.Fragments), f.Job(), f.Orphan())
		}
	}
}

// TestLateAcceptedCountIsPublished: a receiver counts a batch as accepted
// once it is queued, by when the writer may have applied and published it;
// with nothing else changing, the count must still reach a snapshot.
func TestLateAcceptedCountIsPublished(t *testing.T) {
	st := NewStore(Options{PublishEvery: 10 * time.Millisecond})
	defer st.Close()
	st.Sync()
	st.accepted.Add(5) // as SubmitWait counts a batch the writer already published
	for deadline := time.Now().Add(5 * time.Second); st.Snapshot().Stats.Accepted != 5; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("accepted %d after 5 s, want 5", st.Snapshot().Stats.Accepted)
		}
	}
}

// TestWaitingRolloutsTakeAtMostWaitMax: one trace's waiting fragments fill
// waiting rollouts of waitMax each, in arrival order, so that a bound
// evicts the oldest of them and keeps those that came last.
func TestWaitingRolloutsTakeAtMostWaitMax(t *testing.T) {
	const n = 3*waitMax + 8
	st := NewStore(Options{MaxSpans: 2 * n, PublishEvery: time.Hour})
	defer st.Close()
	tr := TraceID{7, 7, 7, 7, 1}
	send := func(from, to int) {
		var spans Batch
		for k := from; k < to; k++ { // two spans a fragment, its top's parent never sent
			top := numID(uint64(1000 + 2*k))
			spans.Append(tr, top, Span{SpanID: numID(uint64(1001 + 2*k))})
			spans.Append(tr, numID(uint64(900_000+k)), Span{SpanID: top})
		}
		if err := st.Add(spans); err != nil {
			t.Fatal(err)
		}
	}
	for k := 0; k < n; k += 8 {
		send(k, min(k+8, n))
	}
	st.Sync()
	var sizes []int
	for _, r := range st.Snapshot().Rollouts {
		sizes = append(sizes, len(r.Fragments))
	}
	if fmt.Sprint(sizes) != fmt.Sprint([]int{waitMax, waitMax, waitMax, 8}) {
		t.Fatalf("waiting rollouts of %v fragments, want three of %d and one of 8", sizes, waitMax)
	}
	// As many again: the bound (2n spans, n fragments) evicts the oldest
	// waiting rollouts, and the last fragment sent is held.
	for k := n; k < 2*n; k += 8 {
		send(k, min(k+8, 2*n))
	}
	st.Sync()
	snap := st.Snapshot()
	last := numID(uint64(1000 + 2*(2*n-1)))
	held := false
	for _, r := range snap.Rollouts {
		if len(r.Fragments) > waitMax {
			t.Errorf("a waiting rollout of %d fragments", len(r.Fragments))
		}
		for _, f := range r.Fragments {
			held = held || f.Spans[0].SpanID == last
		}
	}
	if !held || snap.Stats.EvictedRollouts == 0 || snap.Stats.Stored > 2*n {
		t.Errorf("last fragment held %v, %d rollouts evicted, %d spans stored (bound %d)", held, snap.Stats.EvictedRollouts, snap.Stats.Stored, 2*n)
	}
}

// TestCloneCopiesEveryField: Clone names the fields it copies, so a field
// added to Rollout must be added there; this fails until it is. The
// rollout is a waiting one, with every field set.
func TestCloneCopiesEveryField(t *testing.T) {
	st := NewStore(Options{PublishEvery: time.Hour})
	defer st.Close()
	tr := TraceID{3, 1, 4}
	st.Add(traced(tr, []Span{{SpanID: numID(1), Start: 5, End: 9, Status: StatusError},
		{SpanID: numID(2), Start: 6, End: 8}}, numID(100), numID(200)))
	st.Sync()
	rs := st.Snapshot().Rollouts
	if len(rs) != 1 || !rs[0].waiting {
		t.Fatalf("want one waiting rollout, got %d", len(rs))
	}
	r := rs[0]
	v := reflect.ValueOf(r).Elem()
	for i := 0; i < v.NumField(); i++ {
		if name := v.Type().Field(i).Name; name != "_" && v.Field(i).IsZero() {
			t.Errorf("field %s is zero in the rollout cloned: the test cannot tell it is copied", name)
		}
	}
	c := r.Clone()
	if !reflect.DeepEqual(r, c) {
		t.Errorf("clone %+v, want %+v", c, r)
	}
	for i := range r.Fragments {
		f1, l1 := r.Seen(i)
		f2, l2 := c.Seen(i)
		if f1 != f2 || l1 != l2 {
			t.Errorf("fragment %d: clone seen %d..%d, rollout %d..%d", i, f2, l2, f1, l1)
		}
	}
}
