package rollouts

import (
	"math"
	"sort"

	"github.com/nemo-gym/gymtrace/model"
)

// maxLeakMatch bounds the leaks matched as a whole (an augmenting-path
// matching, quadratic at worst); past it they are matched closest first.
const maxLeakMatch = 4096

// matchLeaks pairs carried-over request spans with the calls that made
// them. A carry-over always leaves its caller's CLIENT span without a child,
// so every leak has a free call on its route and host: the pairing is a
// matching, found whole (augmenting paths, cheapest candidates tried first),
// with no time window beyond the call starting first (under load a
// handler's span may open long after the call).
func (b *build) matchLeaks() {
	us, needs, clients := b.us, b.needs, b.clients
	var leaks []int
	for n := range needs {
		if needs[n].unit >= 0 && us[needs[n].unit].info.leak() {
			leaks = append(leaks, n)
		}
	}
	if len(leaks) == 0 {
		return
	}
	adj := make(map[int][]int, len(leaks))
	for _, n := range leaks {
		info := us[needs[n].unit].info
		type cand struct {
			k    int
			cost int64
		}
		var cs []cand
		for k := range clients {
			c := clients[k].c
			if clients[k].used || int(clients[k].unit) == needs[n].unit || c.start > info.start+callSlack {
				continue
			}
			if t := info.where(); (t.host != "" && c.host() != t.host) || (t.path != "" && c.path() != "" && c.path() != t.path) {
				continue
			}
			cs = append(cs, cand{k, matchCost(info.start, info.end, c.start, c.end)})
		}
		sort.Slice(cs, func(a, b int) bool { return cs[a].cost < cs[b].cost })
		for _, c := range cs {
			adj[n] = append(adj[n], c.k)
		}
	}
	b.attachMatched(augment(leaks, adj, len(leaks) <= maxLeakMatch))
}

// matchRuns pairs each rollout whose agent side is a root of its own (server
// off in the agent: no extraction) with the driver's call to /run that
// started it. Every such rollout has exactly one call, so the pairing is a
// matching, found whole (augmenting paths, closest candidates first): a
// greedy pick of the closest pair can leave a rollout whose only candidate
// another took, which then counts as a rollout of its own beside its call.
func (b *build) matchRuns() {
	us, needs, clients := b.us, b.needs, b.clients
	var runs []int
	for n := range needs {
		if needs[n].unit >= 0 && us[needs[n].unit].info.class == classRollout && len(needs[n].cand()) > 0 {
			runs = append(runs, n)
		}
	}
	if len(runs) == 0 {
		return
	}
	adj := make(map[int][]int, len(runs))
	for _, n := range runs {
		info := us[needs[n].unit].info
		cs := make([]int, 0, len(needs[n].cand()))
		for _, k := range needs[n].cand() {
			if !clients[k].used {
				cs = append(cs, k)
			}
		}
		sort.SliceStable(cs, func(a, b int) bool {
			ca, cb := clients[cs[a]].c, clients[cs[b]].c
			return matchCost(info.start, info.end, ca.start, ca.end) < matchCost(info.start, info.end, cb.start, cb.end)
		})
		adj[n] = cs
	}
	// Closest pairs first, so that the matching keeps the greedy answer
	// wherever the greedy answer is whole.
	sort.SliceStable(runs, func(a, b int) bool {
		ia, ib := us[needs[runs[a]].unit].info, us[needs[runs[b]].unit].info
		ga, gb := int64(math.MaxInt64), int64(math.MaxInt64)
		if c := adj[runs[a]]; len(c) > 0 {
			ga = matchCost(ia.start, ia.end, clients[c[0]].c.start, clients[c[0]].c.end)
		}
		if c := adj[runs[b]]; len(c) > 0 {
			gb = matchCost(ib.start, ib.end, clients[c[0]].c.start, clients[c[0]].c.end)
		}
		return ga < gb
	})
	b.attachMatched(augment(runs, adj, true))
}

// augment matches needs (in order, each trying its candidates in adj's
// order) to clients one to one by augmenting paths: a need whose
// candidates are taken re-routes an earlier one when that one has another.
// Without reroute a taken candidate is skipped (closest first, greedy).
func augment(order []int, adj map[int][]int, reroute bool) map[int]int {
	matched := map[int]int{} // client -> need
	var try func(n int, seen map[int]bool) bool
	try = func(n int, seen map[int]bool) bool {
		for _, k := range adj[n] {
			if seen[k] {
				continue
			}
			seen[k] = true
			if m, ok := matched[k]; !ok || (reroute && try(m, seen)) {
				matched[k] = n
				return true
			}
		}
		return false
	}
	for _, n := range order {
		try(n, map[int]bool{})
	}
	return matched
}

// attachMatched hangs each matched need's unit under the CLIENT span that
// called it.
func (b *build) attachMatched(matched map[int]int) {
	us, needs, clients := b.us, b.needs, b.clients
	for k, n := range matched {
		clients[k].used = true
		u := &us[needs[n].unit]
		u.graft, u.at = clients[k].unit, clients[k].c.span
		u.setHow(attrClient)
		us.union(needs[n].unit, int(clients[k].unit))
		needs[n].unit = -1
	}
}

// matchClosest pairs what is left one to one, closest first. A CLIENT span
// ends when the response headers arrive, right after the callee's handler
// returns, so ends align tightly; starts less so (a handler may wait
// before its span opens). The pair with the smallest gap is matched first,
// and each CLIENT span calls one callee. One handler may open several
// spans that become roots (a sandbox's start and exec), but never two of
// the same name.
func (b *build) matchClosest() {
	us, needs, clients := b.us, b.needs, b.clients
	type edge struct {
		need, client int
		gap          int64
	}
	var edges []edge
	for n := range needs {
		if needs[n].unit < 0 {
			continue
		}
		info := us[needs[n].unit].info
		for _, k := range needs[n].cand() {
			c := clients[k].c
			gap := matchCost(info.start, info.end, c.start, c.end)
			edges = append(edges, edge{n, k, gap})
		}
	}
	sort.Slice(edges, func(a, b int) bool { return edges[a].gap < edges[b].gap })
	type taken struct {
		client int
		name   model.Str
	}
	took := map[taken]bool{}
	for _, ed := range edges {
		nd := &needs[ed.need]
		if nd.unit < 0 {
			continue
		}
		u := &us[nd.unit]
		key := taken{ed.client, u.f.Spans[u.info.root()].Name}
		if took[key] {
			continue
		}
		took[key] = true
		clients[ed.client].used = true
		u.graft, u.at = clients[ed.client].unit, clients[ed.client].c.span
		u.setHow(attrClient)
		us.union(nd.unit, int(clients[ed.client].unit))
		nd.unit = -1
	}
}
