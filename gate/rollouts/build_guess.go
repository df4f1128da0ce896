package rollouts

import "unique"

// sameRollout attributes a need whose free candidates are all of one
// rollout: the rollout is certain even if the call is not. Rounds, because
// a candidate's unit may itself be attributed in a later pass.
func (b *build) sameRollout() {
	us, needs, clients := b.us, b.needs, b.clients
	for round := 0; round < 3; round++ {
		for n := range needs {
			nd := &needs[n]
			if nd.unit < 0 || len(nd.cand()) == 0 {
				continue
			}
			r := -1
			same := true
			for _, k := range nd.cand() {
				if clients[k].used {
					continue
				}
				x := us.find(int(clients[k].unit))
				if r == -1 {
					r = x
				} else if r != x {
					same = false
				}
			}
			if r >= 0 && same {
				us[nd.unit].setHow(attrRollout)
				us.union(nd.unit, r)
				nd.unit = -1
			}
		}
	}
}

// rolloutRoots marks in hasRollout the union-find roots that hold a
// rollout's unit, and returns how many units are a rollout's.
func (b *build) rolloutRoots(hasRollout []bool) (rollUnits int) {
	us := b.us
	for i := range us {
		if us[i].info.class == classRollout {
			hasRollout[us.find(i)] = true
			rollUnits++
		}
	}
	return rollUnits
}

// suspectByRoute: a call on a route that was seen to open a span in a new
// trace did so in its own rollout too, even where that span could not be
// told apart from another's: the rollout is split, as far as the capture
// can tell.
func (b *build) suspectByRoute() {
	us, clients := b.us, b.clients
	emits := map[unique.Handle[callRoute]]int{} // a unit that route produced
	for i := range us {
		if u := &us[i]; u.how() == attrClient && !u.info.leak() {
			for k := range clients {
				if clients[k].unit == u.graft && clients[k].c.span == u.at {
					emits[clients[k].c.route] = i
					break
				}
			}
		}
	}
	for k := range clients {
		c := &clients[k]
		if c.used {
			continue
		}
		if j, ok := emits[c.c.route]; ok {
			b.st.suspectUnits = append(b.st.suspectUnits, [2]int{int(c.unit), j})
		}
	}
}

// window is when one rollout ran, and whether it shows outbound calls.
type window struct {
	start, end int64
	root       int32
	calls      bool
}

// windows returns when each rollout ran, for those that show no outbound
// CLIENT span at all: where the caller records its calls, a fragment no
// call matches is no rollout's (a server called from outside the fleet).
// wins holds at most a window a rollout unit: made at that size, not
// grown.
func (b *build) windows(wins []window) []window {
	us := b.us
	seen := make([]int32, len(us)) // root -> 1 + its window's index; 0: none
	for i := range us {
		if us[i].info.class != classRollout {
			continue
		}
		r := us.find(i)
		if k := seen[r] - 1; k >= 0 {
			wins[k].start, wins[k].end = min(wins[k].start, us[i].info.start), max(wins[k].end, us[i].info.end)
			wins[k].calls = wins[k].calls || us[i].info.calls()
			continue
		}
		seen[r] = int32(len(wins)) + 1
		wins = append(wins, window{root: int32(r), start: us[i].info.start, end: us[i].info.end, calls: us[i].info.calls()})
	}
	k := 0
	for _, w := range wins {
		if !w.calls {
			wins[k] = w
			k++
		}
	}
	return wins[:k]
}

// lastResort settles the needs still open that are in no rollout. Without
// any candidate call (no CLIENT spans were captured for the hop), the only
// rollout running when the unit started is its own. Else it stays
// unattributed, a suspect of each rollout it may be: each is split as far
// as the capture can tell.
func (b *build) lastResort(hasRollout []bool, wins []window) {
	us, needs, clients := b.us, b.needs, b.clients
	for n := range needs {
		nd := &needs[n]
		if nd.unit < 0 {
			continue
		}
		u := &us[nd.unit]
		if hasRollout[us.find(nd.unit)] {
			continue
		}
		if u.info.class == classRollout {
			continue // a rollout of its own whose caller was not found
		}
		var cand []int
		if len(nd.cand()) > 0 {
			for _, k := range nd.cand() {
				cand = appendUnique(cand, us.find(int(clients[k].unit)))
			}
		} else {
			for _, w := range wins {
				if w.start <= u.info.start+callSlack && u.info.start <= w.end {
					cand = appendUnique(cand, us.find(int(w.root)))
				}
			}
			if len(cand) == 1 {
				u.setHow(attrWindow)
				us.union(nd.unit, cand[0])
				continue
			}
		}
		u.setHow(attrNone)
		for _, c := range cand {
			if hasRollout[us.find(c)] {
				b.st.suspectUnits = append(b.st.suspectUnits, [2]int{c, nd.unit})
			}
		}
	}
}
