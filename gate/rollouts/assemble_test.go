package rollouts

import (
	"slices"
	"testing"
)

// fill lists each union-find set's units in unit order, the sets in
// order of their first unit, whatever unit is a set's root.
func TestUnitGroups(t *testing.T) {
	cases := []struct {
		name  string
		roots []int // unit i's root
		want  [][]int32
	}{
		{"none", nil, [][]int32{}},
		{"each its own", []int{0, 1, 2}, [][]int32{{0}, {1}, {2}}},
		{"interleaved", []int{0, 0, 2, 0, 2, 5}, [][]int32{{0, 1, 3}, {2, 4}, {5}}},
		{"root after its first unit", []int{3, 1, 3, 3, 1}, [][]int32{{0, 2, 3}, {1, 4}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			find := func(i int) int { return tc.roots[i] }
			n, groups := len(tc.roots), countRoots(make([]gunit, len(tc.roots)), find)
			gs := unitGroups{n: groups, gi: make([]int32, n), off: make([]int32, groups+1), mem: make([]int32, n), rollAt: make([]int32, groups)}
			gs.fill(find)
			got := make([][]int32, gs.n)
			for g := range gs.n {
				got[g] = gs.members(g)
			}
			if !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("roots %v: groups %v, want %v", tc.roots, got, tc.want)
			}
			if len(gs.rollAt) != gs.n || slices.ContainsFunc(gs.rollAt, func(k int32) bool { return k != 0 }) {
				t.Errorf("roots %v: rollAt %v, want %d zeros", tc.roots, gs.rollAt, gs.n)
			}
		})
	}
}
