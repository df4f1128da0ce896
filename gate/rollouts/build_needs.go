package rollouts

import (
	"sort"

	"github.com/nemo-gym/gymtrace/model"
)

// cref is a dangling CLIENT span of a unit.
type cref struct {
	c    *danglingClient
	unit int32
	used bool
}

// need is a unit looking for the call that caused it.
type need struct {
	unit int // -1 once attributed
	// cands indexes the candidate calls in the clients, nil for none: a
	// pointer, as most needs of a capture of rootless traces have none, so
	// that a need is 16 bytes of a check's working set, not 32.
	cands *[]int
}

// cand returns the candidate calls.
func (n *need) cand() []int {
	if n.cands == nil {
		return nil
	}
	return *n.cands
}

// markNeeds marks in needing the units that need a caller: orphans, leaked request
// spans, and rollout units whose top is the agent's side of a /run call.
// An orphan naming an anchored rollout's id, or whose absent parent's
// trace is one rollout's, joins it here instead. Units are marked first
// and listed at their number (findCandidates): where spans name their
// parents few units need one, and a list made for every unit would be most
// of a check's working set. Where there is no call to match and no rollout
// to be in, a unit that needs a caller ends unattributed, as it is now:
// none is marked.
func (b *build) markNeeds(a *anchors, needing []bool) (nneed int) {
	us := b.us
	canMatch := b.nc > 0 || a.anyRollout
	for i := range us {
		u := &us[i]
		info := u.info
		top := &u.f.Spans[info.root()]
		switch {
		case info.class == classRun && !info.leak():
			continue
		case info.cut():
			continue // its caller is the span above it
		case info.class == classRollout && top.Kind == model.KindClient:
			continue // the driver's own call to /run: it has no caller
		case info.class == classRollout && !info.leak() && u.f.ParentID(int(info.root())).IsZero() && info.root() == 0 && !u.f.UnderJob && !a.runCalls:
			continue // a rollout started without a driver span (standalone)
		}
		if info.class == classOrphan && info.extra().rid != "" {
			if j, ok := a.byID[info.extra().rid]; ok {
				us.union(i, j)
				u.setHow(attrID)
				continue
			}
		}
		if !info.leak() && !u.f.ParentID(int(info.root())).IsZero() {
			// The parent's id is known but it is not here: not exported, or
			// not yet. Only its trace can tell whose it is.
			if j, ok := a.traceRoll[u.f.TraceID]; ok && j >= 0 && info.class == classOrphan {
				us.union(i, j)
				u.setHow(attrTrace)
			}
			continue
		}
		if canMatch {
			needing[i] = true
			nneed++
		}
	}
	return nneed
}

// listClients lists the dangling CLIENT spans by start time, made to keep
// them all first. Only where some unit needs one: the orphan agent batch
// holds 300k, and none of its units needs a caller.
func (b *build) listClients() {
	us := b.us
	b.e.keepAllCalls(us)
	b.clients = make([]cref, 0, b.nc)
	for i := range us {
		cl := us[i].info.extra().clients
		for k := range cl {
			c := &cl[k]
			b.clients = append(b.clients, cref{unit: int32(i), c: c})
			b.maxDur = max(b.maxDur, c.end-c.start)
		}
	}
	clients := b.clients
	sort.Slice(clients, func(a, b int) bool { return clients[a].c.start < clients[b].c.start })
}

// findCandidates lists each marked unit's need with the calls that may
// have caused it: started no later than it (give or take callSlack), ended
// after it, to the host it served (or one its process serves) and its
// path; a rollout's only calls to /run.
func (b *build) findCandidates(needing []bool, nneed int, hosts *hostIndex) {
	us, clients, maxDur := b.us, b.clients, b.maxDur
	b.needs = make([]need, 0, nneed)
	for i := range us {
		if !needing[i] {
			continue
		}
		u := &us[i]
		info := u.info
		top := &u.f.Spans[info.root()]
		where := info.where()
		host := where.host
		if host == "" {
			host = hosts.resHost[top.Resource]
		}
		nd := need{unit: i}
		var cands []int
		lo := sort.Search(len(clients), func(k int) bool { return clients[k].c.start >= info.start-maxDur-callSlack })
		for k := lo; k < len(clients) && clients[k].c.start <= info.start+callSlack; k++ {
			c := clients[k].c
			if int(clients[k].unit) == i || info.start > c.end+callSlack || info.end > c.end+endSlack(c) {
				continue
			}
			route := c.route.Value()
			if host != "" {
				if route.host != host {
					continue
				}
			} else if r, ok := hosts.hostOf[route.host]; ok && r != top.Resource {
				continue
			}
			if where.path != "" && route.path != "" && route.path != where.path {
				continue
			}
			if info.class == classRollout && route.path != "/run" {
				continue
			}
			cands = append(cands, k)
		}
		if len(cands) > 0 {
			nd.cands = new([]int) // made here only: &cands would be made for every need
			*nd.cands = cands
		}
		b.needs = append(b.needs, nd)
	}
}

// narrowByRoute learns which routes open which root spans from the needs
// with one candidate only, and keeps, for the others, the candidates on
// those routes (a sandbox's spans come from the tool route that uses it).
func (b *build) narrowByRoute() {
	us, needs, clients := b.us, b.needs, b.clients
	routes := map[model.Str]map[string]bool{}
	for n := range needs {
		if len(needs[n].cand()) == 1 {
			u := &us[needs[n].unit]
			name := u.f.Spans[u.info.root()].Name
			if routes[name] == nil {
				routes[name] = map[string]bool{}
			}
			routes[name][clients[needs[n].cand()[0]].c.path()] = true
		}
	}
	for n := range needs {
		u := &us[needs[n].unit]
		known := routes[u.f.Spans[u.info.root()].Name]
		if len(needs[n].cand()) < 2 || known == nil {
			continue
		}
		var keep []int
		for _, k := range needs[n].cand() {
			if known[clients[k].c.path()] {
				keep = append(keep, k)
			}
		}
		if len(keep) > 0 {
			*needs[n].cands = keep
		}
	}
}
