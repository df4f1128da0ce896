package rollouts

import (
	"fmt"
	"sort"
	"strings"

	"github.com/nemo-gym/gymtrace/model"
)

// LookupError says why an id named no one rollout: several match it
// (Matches), or none does (Nearest are the ids closest to it).
type LookupError struct {
	ID      string
	Matches []string // ids the given one is a prefix or suffix of, sorted
	Nearest []string // closest ids first, when none matches
	Total   int      // rollouts looked in
}

func (e *LookupError) Error() string {
	switch {
	case len(e.Matches) > 0:
		return fmt.Sprintf("%q names %d rollouts: %s (give more of the id)", e.ID, len(e.Matches), listMax(e.Matches, 8))
	case e.Total == 0:
		return fmt.Sprintf("%q: no such rollout, the capture holds none", e.ID)
	}
	return fmt.Sprintf("%q: no such rollout among %d; nearest %s", e.ID, e.Total, strings.Join(e.Nearest, ", "))
}

// Lookup returns the rollout of rs that id names: the rollout with that id,
// else the one rollout whose id starts or ends with it (a synthetic id
// may be given without its ~). Anything else is a *LookupError.
func Lookup(rs []*model.Rollout, id string) (*model.Rollout, error) {
	if id == "" {
		return nil, &LookupError{ID: id, Total: len(rs)}
	}
	var found []*model.Rollout
	for _, r := range rs {
		if r.ID == id {
			return r, nil
		}
		if strings.HasPrefix(r.ID, id) || strings.HasSuffix(r.ID, id) ||
			r.Synthetic && strings.HasPrefix(strings.TrimPrefix(r.ID, "~"), id) {
			found = append(found, r)
		}
	}
	if len(found) == 1 {
		return found[0], nil
	}
	e := &LookupError{ID: id, Total: len(rs)}
	if len(found) > 1 {
		for _, r := range found {
			e.Matches = append(e.Matches, r.ID)
		}
		sort.Strings(e.Matches)
		return nil, e
	}
	e.Nearest = nearest(rs, id, 3)
	return nil, e
}

// nearest returns the n ids of rs closest to id by edit distance; of
// those as close, the ones sharing a longer start with id (a typo is seldom
// in the first characters), then in id order.
func nearest(rs []*model.Rollout, id string, n int) []string {
	type scored struct {
		id     string
		d, pre int
	}
	all := make([]scored, 0, len(rs))
	for _, r := range rs {
		pre := 0
		for pre < len(id) && pre < len(r.ID) && id[pre] == r.ID[pre] {
			pre++
		}
		all = append(all, scored{r.ID, editDistance(id, r.ID), pre})
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.d != b.d {
			return a.d < b.d
		}
		if a.pre != b.pre {
			return a.pre > b.pre
		}
		return a.id < b.id
	})
	var out []string
	for _, s := range all[:min(n, len(all))] {
		out = append(out, s.id)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// listMax joins xs, the first n and how many more.
func listMax(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(", … %d more", len(xs)-n)
}
