package cohort

import (
	"fmt"
	"github.com/nemo-gym/gymtrace/gate/internal/realgym"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/filter"
	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/model"
)

// TestFailingRollouts: on real captures, --cohort status=error takes
// exactly the rollouts with an error span, the baseline the rest, and the
// top rows set them apart completely (effect ±1).
func TestFailingRollouts(t *testing.T) {
	for _, name := range []string{"s41-obs0-iso/all", "s52-g3-obs0-iso/all", "s41-obs1-iso/all"} {
		t.Run(name, func(t *testing.T) {
			eng, snap := realgym.Capture(t, name)
			c, err := Compare(eng, snap, filter.MustParse("status=error"), nil)
			if err != nil {
				t.Fatal(err)
			}
			st := eng.Structure(snap).Snap
			failing := 0
			for _, r := range st.Rollouts {
				if r.Errors > 0 {
					failing++
				}
			}
			if len(c.Cohort) != failing || len(c.Baseline) != len(st.Rollouts)-failing || failing == 0 || c.Overlap != 0 {
				t.Fatalf("cohort %d, baseline %d; %d of %d rollouts fail", len(c.Cohort), len(c.Baseline), failing, len(st.Rollouts))
			}
			if len(c.Rows) == 0 || math.Abs(c.Rows[0].Effect) != 1 {
				t.Fatalf("top row %+v", c.Rows)
			}
			for i := 1; i < len(c.Rows); i++ {
				if math.Abs(c.Rows[i].Effect) > math.Abs(c.Rows[i-1].Effect) {
					t.Fatalf("row %d (%v) ranks below a smaller effect", i, c.Rows[i].Effect)
				}
			}
		})
	}
}

// TestEffectRecomputed: every span-name count row's means and effect are
// what the raw spans give, counted here pair by pair.
func TestEffectRecomputed(t *testing.T) {
	eng, snap := realgym.Capture(t, "s41-obs0-iso/all")
	c, err := Compare(eng, snap, filter.MustParse("status=error"), nil)
	if err != nil {
		t.Fatal(err)
	}
	in := snap.Interner()
	count := func(r *model.Rollout, f Feature) float64 {
		n := 0
		for _, fr := range r.Fragments {
			for i := range fr.Spans {
				sp := &fr.Spans[i]
				if snap.ServiceName(sp.Resource) == f.Service && rollouts.DisplayName(in, sp) == f.Name {
					n++
				}
			}
		}
		return float64(n)
	}
	checked := 0
	for _, row := range c.Rows {
		if row.Feature.Kind != SpanName || row.Metric != Count {
			continue
		}
		var gt, lt int
		var sa, sb float64
		for _, a := range c.Cohort {
			sa += count(a, row.Feature)
			for _, b := range c.Baseline {
				switch x, y := count(a, row.Feature), count(b, row.Feature); {
				case x > y:
					gt++
				case x < y:
					lt++
				}
			}
		}
		for _, b := range c.Baseline {
			sb += count(b, row.Feature)
		}
		want := float64(gt-lt) / float64(len(c.Cohort)*len(c.Baseline))
		if math.Abs(row.Effect-want) > 1e-12 || math.Abs(row.Cohort-sa/float64(len(c.Cohort))) > 1e-12 || math.Abs(row.Baseline-sb/float64(len(c.Baseline))) > 1e-12 {
			t.Errorf("%v: effect %v means %v %v, want %v %v %v", row.Feature, row.Effect, row.Cohort, row.Baseline, want, sa/float64(len(c.Cohort)), sb/float64(len(c.Baseline)))
		}
		checked++
	}
	if checked < 3 {
		t.Fatalf("only %d span count rows to check", checked)
	}
}

// TestComplement: the baseline as cohort, and the cohort as baseline, turn
// every effect around.
func TestComplement(t *testing.T) {
	eng, snap := realgym.Capture(t, "s41-obs0-iso/all")
	ab, err := Compare(eng, snap, filter.MustParse("status=error"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ba, err := Compare(eng, snap, filter.MustParse("-status=error"), filter.MustParse("status=error"))
	if err != nil {
		t.Fatal(err)
	}
	key := func(r Row) string { return fmt.Sprint(r.Feature, r.Metric) }
	back := map[string]Row{}
	for _, r := range ba.Rows {
		back[key(r)] = r
	}
	if len(ab.Rows) != len(ba.Rows) {
		t.Fatalf("%d rows one way, %d the other", len(ab.Rows), len(ba.Rows))
	}
	for _, r := range ab.Rows {
		b, ok := back[key(r)]
		if !ok || b.Effect != -r.Effect || b.Cohort != r.Baseline || b.Baseline != r.Cohort {
			t.Errorf("%s: %+v one way, %+v the other", key(r), r, b)
		}
	}
}

// TestCompareErrors: an empty side is named.
func TestCompareErrors(t *testing.T) {
	eng, snap := realgym.Capture(t, "s41-obs0-iso/all")
	for _, tc := range []struct{ cohort, baseline, want string }{
		{"service=nosuch", "", `cohort "service=nosuch" matches none of the 20 rollouts`},
		{"name=gym.rollout", "", "matches all 20 rollouts: no other rollout is left"},
		{"status=error", "service=nosuch", `baseline "service=nosuch" matches none`},
	} {
		var bf *filter.Filter
		if tc.baseline != "" {
			bf = filter.MustParse(tc.baseline)
		}
		if _, err := Compare(eng, snap, filter.MustParse(tc.cohort), bf); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("cohort %q baseline %q: %v, want %q", tc.cohort, tc.baseline, err, tc.want)
		}
	}
}

// TestCliff: the effect size by hand.
func TestCliff(t *testing.T) {
	tests := []struct {
		a, b []float64
		want float64
	}{
		{[]float64{1, 2}, []float64{0, 0}, 1},
		{[]float64{0}, []float64{1, 2}, -1},
		{[]float64{1, 1}, []float64{1, 1}, 0},
		{[]float64{1, 3}, []float64{2}, 0},
		{[]float64{2, 3, 4}, []float64{1, 3}, (4.0 - 1) / 6}, // 4 pairs above, 1 below, 1 tie
	}
	for _, tt := range tests {
		if got := cliff(tt.a, tt.b); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("cliff(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
	// Sides of every size against each other, counted pair by pair.
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, n := range [][2]int{{1, 300}, {300, 1}, {7, 40}, {40, 7}, {50, 50}} {
		a, b := make([]float64, n[0]), make([]float64, n[1])
		for i := range a {
			a[i] = float64(rnd.IntN(6))
		}
		for i := range b {
			b[i] = float64(rnd.IntN(6))
		}
		var gt, lt int
		for _, x := range a {
			for _, y := range b {
				if x > y {
					gt++
				} else if x < y {
					lt++
				}
			}
		}
		if got, want := cliff(a, b), float64(gt-lt)/float64(len(a)*len(b)); got != want {
			t.Errorf("cliff of %d against %d = %v, want %v", n[0], n[1], got, want)
		}
	}
}
