package mcpserver

import (
	"fmt"
	"sort"
	"strings"

	"github.com/nemo-gym/gymtrace/model"
)

// nearestShown is how many ids an unknown rollout id's error names.
const nearestShown = 5

// findRollout returns snap's rollout id, or an error naming the ids
// nearest to it, so a mistyped or truncated id can be retried.
func findRollout(snap *model.Snapshot, id string) (*model.Rollout, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return nil, fmt.Errorf("rollout_id is empty: list_rollouts gives the ids")
	}
	for _, r := range snap.Rollouts {
		if r.ID == id {
			return r, nil
		}
	}
	if len(snap.Rollouts) == 0 {
		return nil, fmt.Errorf("no rollout %q: the capture holds no rollout yet", id)
	}
	return nil, fmt.Errorf("no rollout %q among %d; nearest: %s", id, len(snap.Rollouts), strings.Join(nearest(snap.Rollouts, id, nearestShown), ", "))
}

// nearest ranks ids by how close they are to id: containing it (or
// contained in it) first, then by edit distance, then by name.
func nearest(rolls []*model.Rollout, id string, n int) []string {
	type cand struct {
		id   string
		dist int
	}
	low := strings.ToLower(id)
	cs := make([]cand, 0, len(rolls))
	for _, r := range rolls {
		l := strings.ToLower(r.ID)
		d := 0
		if !strings.Contains(l, low) && !strings.Contains(low, l) {
			d = 1 + editDistance(l, low, 64)
		}
		cs = append(cs, cand{r.ID, d})
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].dist != cs[j].dist {
			return cs[i].dist < cs[j].dist
		}
		return cs[i].id < cs[j].id
	})
	var out []string
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, fmt.Sprintf("%q", cs[i].id))
	}
	return out
}

// editDistance is the Levenshtein distance of a and b, at most max (ids
// far apart are all as far, and a long id costs no more than that).
func editDistance(a, b string, max int) int {
	if len(a) > max {
		a = a[:max]
	}
	if len(b) > max {
		b = b[:max]
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			c = min(c, prev[j]+1, cur[j-1]+1)
			cur[j] = c
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
