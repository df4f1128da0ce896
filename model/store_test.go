package model

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// tspan is a test span: name, id, parent id, resource, rollout attribute.
type tspan struct {
	name, id, parent string
	res              ResourceID
	rid              string
	kind             Kind
}

func sid(s string) SpanID {
	var id SpanID
	copy(id[:], s)
	return id
}

func build(t *testing.T, st *Store, trace TraceID, ts []tspan) Batch {
	t.Helper()
	l := NewLocal(st.Interner())
	key := l.Intern([]byte(RolloutIDKey))
	var out Batch
	for _, x := range ts {
		var b AttrBuilder
		if x.rid != "" {
			b.String(l, key, []byte(x.rid))
		}
		var parent SpanID
		if x.parent != "" {
			parent = sid(x.parent)
		}
		out.Append(trace, parent, Span{SpanID: sid(x.id), Name: l.Intern([]byte(x.name)), Resource: x.res, Kind: x.kind, Attrs: b.Attrs()})
	}
	return out
}

// render prints every rollout's fragments as indented trees.
func render(s *Snapshot) string {
	var b strings.Builder
	for _, r := range s.Rollouts {
		fmt.Fprintf(&b, "rollout %s frags=%d spans=%d\n", r.ID, len(r.Fragments), r.Spans)
		for _, f := range r.Fragments {
			depth := make([]int, len(f.Spans))
			// Render children in name order so arrival order does not matter.
			var walk func(i, d int)
			kids := map[int32][]int{}
			for i, sp := range f.Spans {
				kids[sp.Parent] = append(kids[sp.Parent], i)
				_ = depth
			}
			walk = func(i, d int) {
				fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", d+1), s.Str(f.Spans[i].Name))
				ks := kids[int32(i)]
				names := make([]string, len(ks))
				for j, k := range ks {
					names[j] = s.Str(f.Spans[k].Name) + fmt.Sprint(k)
				}
				sortBy(ks, func(k int) string { return s.Str(f.Spans[k].Name) + string(f.Spans[k].SpanID[:]) })
				for _, k := range ks {
					walk(k, d+1)
				}
			}
			walk(0, 0)
		}
	}
	for _, j := range s.Jobs {
		fmt.Fprintf(&b, "job %s\n", s.Str(j.Spans[0].Name))
	}
	return b.String()
}

func sortBy(xs []int, key func(int) string) {
	for i := 1; i < len(xs); i++ {
		for j := i; j > 0 && key(xs[j]) < key(xs[j-1]); j-- {
			xs[j], xs[j-1] = xs[j-1], xs[j]
		}
	}
}

var jobTree = []tspan{
	{name: "gym.job", id: "job"},
	{name: "HTTP POST", id: "c1", parent: "job", res: 1, kind: KindClient},
	{name: "POST /run", id: "s1", parent: "c1", res: 2, kind: KindServer},
	{name: "gym.rollout", id: "r1", parent: "s1", res: 2, rid: "r-1"},
	{name: "HTTP POST", id: "c11", parent: "r1", res: 2, kind: KindClient},
	{name: "POST /v1/responses", id: "s11", parent: "c11", res: 3, kind: KindServer},
	{name: "gym.model.responses", id: "m11", parent: "s11", res: 3, rid: "r-1"},
	{name: "HTTP POST", id: "c2", parent: "job", res: 1, kind: KindClient},
	{name: "POST /run", id: "s2", parent: "c2", res: 2, kind: KindServer},
	{name: "gym.rollout", id: "r2", parent: "s2", res: 2, rid: "r-2"},
}

func TestStoreTreesIndependentOfArrivalOrder(t *testing.T) {
	var trace TraceID
	trace[0] = 7
	var want string
	for seed := int64(0); seed < 50; seed++ {
		st := NewStore(Options{})
		spans := build(t, st, trace, jobTree)
		rng := rand.New(rand.NewSource(seed))
		if seed > 0 {
			rng.Shuffle(len(spans.Spans), spans.swap)
		}
		for len(spans.Spans) > 0 {
			n := 1 + rng.Intn(3)
			if n > len(spans.Spans) {
				n = len(spans.Spans)
			}
			if err := st.Submit(spans.slice(0, n)); err != nil {
				t.Fatal(err)
			}
			spans = spans.slice(n, len(spans.Spans))
		}
		st.Sync()
		got := renderSorted(st.Snapshot())
		st.Close()
		if seed == 0 {
			want = got
			if !strings.Contains(want, "rollout r-1 frags=1 spans=6") || !strings.Contains(want, "rollout r-2 frags=1 spans=3") {
				t.Fatalf("in-order tree wrong:\n%s", want)
			}
			continue
		}
		if got != want {
			t.Fatalf("seed %d: got\n%s\nwant\n%s", seed, got, want)
		}
	}
}

// renderSorted renders with rollouts sorted by id, since first-seen order
// depends on arrival.
func renderSorted(s *Snapshot) string {
	parts := strings.SplitAfter(render(s), "\n")
	var blocks []string
	cur := ""
	for _, p := range parts {
		if strings.HasPrefix(p, "rollout ") || strings.HasPrefix(p, "job ") {
			if cur != "" {
				blocks = append(blocks, cur)
			}
			cur = ""
		}
		cur += p
	}
	blocks = append(blocks, cur)
	for i := 1; i < len(blocks); i++ {
		for j := i; j > 0 && blocks[j] < blocks[j-1]; j-- {
			blocks[j], blocks[j-1] = blocks[j-1], blocks[j]
		}
	}
	return strings.Join(blocks, "")
}

// TestBatchNeedsATraceIDPerSpan: a batch whose trace ids do not pair up
// with its spans is refused whole, by Add and Submit alike.
func TestBatchNeedsATraceIDPerSpan(t *testing.T) {
	st := NewStore(Options{})
	defer st.Close()
	b := Batch{Spans: []Span{{SpanID: sid("a")}, {SpanID: sid("b")}}, Traces: []TraceID{{1}}}
	if err := st.Add(b); !errors.Is(err, ErrBadBatch) {
		t.Errorf("Add: %v, want ErrBadBatch", err)
	}
	if err := st.Submit(b); !errors.Is(err, ErrBadBatch) {
		t.Errorf("Submit: %v, want ErrBadBatch", err)
	}
	st.Sync()
	if s := st.Snapshot().Stats; s.Stored != 0 || s.Accepted != 0 {
		t.Errorf("stored %d, accepted %d; want none", s.Stored, s.Accepted)
	}
}
