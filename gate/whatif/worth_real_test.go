package whatif_test

import (
	"testing"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/internal/realgym"
	"github.com/nemo-gym/gymtrace/gate/whatif"
)

// TestWorthJoinsArePreviews: the joins Worth gives each group, with it and
// without it, are what a preview of that spec counts, on every shipped
// capture of real Gym, from the default spec and from all.
func TestWorthJoinsArePreviews(t *testing.T) {
	for _, name := range realgym.Cases(t) {
		t.Run(name, func(t *testing.T) {
			eng, snap := realgym.Capture(t, name)
			reg := eng.Registry()
			for _, text := range []string{"default", "all"} {
				spec, err := reg.Parse(text)
				if err != nil {
					t.Fatal(err)
				}
				for _, w := range eng.Worth(snap, spec, 0) {
					if w.Group == groups.Unclassified || w.Group == groups.Ungated {
						continue
					}
					// A fresh engine, so that nothing Worth cached answers.
					fresh := whatif.NewEngine(reg)
					with := fresh.Preview(snap, spec.With(w.Group)).Result.RolloutsJoined
					without := fresh.Preview(snap, spec.Without(w.Group)).Result.RolloutsJoined
					if w.JoinedWith != with || w.JoinedWithout != without {
						t.Errorf("%s from %s: Worth says %d joined with it, %d without; previews say %d and %d",
							reg.Name(w.Group), text, w.JoinedWith, w.JoinedWithout, with, without)
					}
				}
			}
		})
	}
}
