package critpath

import (
	"testing"

	"github.com/nemo-gym/gymtrace/gate/internal/realgym"
	"github.com/nemo-gym/gymtrace/model"
)

// TestPathTilesEveryRollout: over every real capture, each rollout's path
// adds up to its wall time (its spans' first start to last end, counted
// here from the spans themselves), its segments follow each other without
// gap or overlap, each lies within its span, and no child of a segment's
// span but its own ASGI body I/O runs during it: the span holds that time
// on its own.
func TestPathTilesEveryRollout(t *testing.T) {
	for _, name := range realgym.Cases(t) {
		t.Run(name, func(t *testing.T) {
			eng, snap := realgym.Capture(t, name)
			st := eng.Structure(snap)
			if len(st.Rollouts) == 0 {
				t.Fatal("no rollouts")
			}
			for _, r := range st.Rollouts {
				checkPath(t, st.Snap, r)
			}
		})
	}
}

func checkPath(t *testing.T, snap *model.Snapshot, r *model.Rollout) {
	t.Helper()
	first, last := int64(0), int64(0)
	kids := map[*model.Span][]*model.Span{}
	for _, f := range r.Fragments {
		for i := range f.Spans {
			sp := &f.Spans[i]
			if first == 0 || sp.Start < first {
				first = sp.Start
			}
			last = max(last, sp.End)
			if p := sp.Parent; p >= 0 {
				kids[&f.Spans[p]] = append(kids[&f.Spans[p]], sp)
			}
		}
	}
	p := Find(snap, r)
	var sum int64
	at := first
	for i, s := range p.Segments {
		if s.Start != at || s.End <= s.Start {
			t.Fatalf("rollout %s segment %d [%d, %d) after %d", r.ID, i, s.Start, s.End, at)
		}
		at = s.End
		sum += s.Self()
		if s.Span == nil {
			if s.Holder != Gap {
				t.Errorf("rollout %s segment %d: no span, holder %v", r.ID, i, s.Holder)
			}
			continue
		}
		if s.Start < s.Span.Start || s.End > s.Span.End {
			t.Errorf("rollout %s segment %d [%d, %d) outside its span %s [%d, %d)", r.ID, i, s.Start, s.End, s.Name, s.Span.Start, s.Span.End)
		}
		for _, k := range kids[s.Span] {
			// The request's own body I/O is its time (asgiIO).
			if io := snap.Str(k.Name); io == snap.Str(s.Span.Name)+" http receive" || io == snap.Str(s.Span.Name)+" http send" {
				continue
			}
			if k.Start < s.End && k.End > s.Start {
				t.Errorf("rollout %s segment %d (%s): child %s runs during it", r.ID, i, s.Name, snap.Str(k.Name))
			}
		}
	}
	d := last - first
	// Exact by construction; the contract is 5 %.
	if sum != d || at != last || p.Duration() != d {
		t.Errorf("rollout %s: segments add up to %d ns, ending at %d; its wall time is %d ns to %d", r.ID, sum, at, d, last)
	}
	var held int64
	for _, h := range p.Holders {
		held += h.Duration
	}
	if held != sum {
		t.Errorf("rollout %s: holders %v add up to %d, segments to %d", r.ID, p.Holders, held, sum)
	}
}

// TestPathHolders: in a healthy run the driver holds the path first and
// never a gap last, and the agent, the model and resources each hold a
// part, with no stretch uncovered; with the model's spans cut off
// by a broken hop, its fragments are hung back under the agent's calls and
// the model still holds its part.
func TestPathHolders(t *testing.T) {
	for _, tc := range []struct {
		name    string
		grafted bool
	}{
		{"s41-obs0-iso/all", false},
		{"s52-g3-obs0-iso/all", false},
		{"s61-rl-iso/rl-all", false},
		{"s41-obs0-iso/broken-model", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng, snap := realgym.Capture(t, tc.name)
			st := eng.Structure(snap)
			for _, r := range st.Rollouts {
				p := Find(st.Snap, r)
				segs := p.Segments
				if segs[0].Holder != Driver || segs[len(segs)-1].Holder == Gap {
					t.Errorf("rollout %s: first held by %v (%s), last by %v (%s)", r.ID, segs[0].Holder, segs[0].Service,
						segs[len(segs)-1].Holder, segs[len(segs)-1].Service)
				}
				by := map[Holder]int64{}
				for _, h := range p.Holders {
					by[h.Holder] = h.Duration
				}
				if by[Agent] == 0 || by[Model] == 0 || by[Resources] == 0 || by[Gap] != 0 || by[Other] != 0 {
					t.Errorf("rollout %s: holders %v", r.ID, p.Holders)
				}
				if (p.Grafted > 0) != tc.grafted || p.Unplaced != 0 {
					t.Errorf("rollout %s: %d fragments grafted, %d unplaced", r.ID, p.Grafted, p.Unplaced)
				}
			}
		})
	}
}
