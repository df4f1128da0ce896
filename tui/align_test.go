package tui

import (
	"fmt"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
)

// align must give every rollout of the next snapshot its own row data,
// reusing the previous snapshot's for the very rollouts it still has,
// whatever changed between them.
func TestAlignRowData(t *testing.T) {
	// Versions as the store gives them: one per rollout state.
	version := uint64(0)
	mk := func(id string) *model.Rollout {
		version++
		return &model.Rollout{ID: id, Spans: len(id), Version: version}
	}
	var base []*model.Rollout
	for i := range 3000 {
		base = append(base, mk(fmt.Sprintf("r%05d", i)))
	}
	changed := mk("r00010")
	cases := map[string][]*model.Rollout{
		"same":                    base,
		"evicted in front":        base[1500:],
		"appended":                append(append([]*model.Rollout{}, base...), mk("new1"), mk("new2")),
		"changed in place":        append(append(append([]*model.Rollout{}, base[:10]...), changed), base[11:]...),
		"evicted past the window": base[2900:],
		// The analysis builds a rollout again: equal, not the same pointer.
		"rebuilt": func() []*model.Rollout {
			out := make([]*model.Rollout, len(base))
			for i, r := range base {
				out[i] = r.Clone()
			}
			return out[100:]
		}(),
		"reversed": func() []*model.Rollout {
			out := make([]*model.Rollout, len(base))
			for i, r := range base {
				out[len(base)-1-i] = r
			}
			return out
		}(),
		"emptied": nil,
	}
	for name, next := range cases {
		t.Run(name, func(t *testing.T) {
			prev := align(nil, nil, &model.Snapshot{Rollouts: base})
			for i := range prev {
				prev[i].matchGen, prev[i].match = 7, true // a verdict to carry over
			}
			got := align(prev, nil, &model.Snapshot{Rollouts: next})
			if len(got) != len(next) {
				t.Fatalf("%d row data for %d rollouts", len(got), len(next))
			}
			kept := 0
			for i, r := range next {
				in := got[i]
				if in.r != r || in.idLen != int32(len(r.ID)) || in.spansW != int32(countWidth(r.Spans)) {
					t.Fatalf("row %d: data of %v for %s", i, in.r, r.ID)
				}
				if in.matchGen == 7 {
					kept++
					if r == changed || r.ID == "new1" || r.ID == "new2" {
						t.Errorf("%s: a verdict carried to a rollout it was not judged on", r.ID)
					}
				}
			}
			if name != "appended" && name != "changed in place" && name != "emptied" {
				if kept != len(next) {
					t.Errorf("kept %d of %d rollouts' data", kept, len(next))
				}
			}
		})
	}
}
