package rollouts

import (
	"slices"

	"github.com/nemo-gym/gymtrace/model"
)

// hostIndex is which process serves each host:port, from the units'
// request spans.
type hostIndex struct {
	hostOf  map[string]model.ResourceID // host:port -> the process that served it last
	resHost map[model.ResourceID]string // process -> the first host:port it served
}

// serveHosts fills hx with the hosts each process serves, from its request spans.
// A fleet serves few hosts, each unit repeating them: the maps' current
// entries are mirrored in short slices, so a repeat costs no hashing.
func (b *build) serveHosts(hx *hostIndex) {
	us, hostOf, resHost := b.us, hx.hostOf, hx.resHost
	var hostNow []hostRes
	var resSeen []model.ResourceID
	const mirrored = 32
	for i := range us {
		us[i].info.eachServer(func(h hostRes) {
			k := 0
			for k < len(hostNow) && hostNow[k].host != h.host {
				k++
			}
			if k < len(hostNow) {
				if hostNow[k].res != h.res {
					hostNow[k].res = h.res
					hostOf[h.host] = h.res
				}
			} else {
				if len(hostNow) < mirrored {
					hostNow = append(hostNow, h)
				}
				hostOf[h.host] = h.res
			}
			if slices.Contains(resSeen, h.res) {
				return
			}
			if _, ok := resHost[h.res]; !ok {
				resHost[h.res] = h.host
			}
			if len(resSeen) < mirrored {
				resSeen = append(resSeen, h.res)
			}
		})
	}
}

// anchors are the rollout units' ids and traces, which orphans naming
// them join.
type anchors struct {
	byID       map[string]int        // rollout id -> its first anchored unit
	traceRoll  map[model.TraceID]int // trace -> anchored unit, -1 when several
	anyRollout bool                  // some unit is a rollout's
	runCalls   bool                  // some dangling CLIENT span calls /run
}

// anchor fills a: it joins the rollout units that name one rollout id and indexes them
// by id and by trace. Whether any dangling CLIENT span calls /run comes
// from the units' own lists: the list of them all by start time is made
// only when a unit needs a caller.
func (b *build) anchor(a *anchors) {
	us := b.us
	for i := range us {
		u := &us[i]
		if u.info.class != classRollout {
			continue
		}
		a.anyRollout = true
		if u.info.extra().rid != "" {
			if j, ok := a.byID[u.info.extra().rid]; ok {
				us.union(i, j)
			} else {
				a.byID[u.info.extra().rid] = i
			}
		}
		if j, ok := a.traceRoll[u.f.TraceID]; !ok {
			a.traceRoll[u.f.TraceID] = i
		} else if j != i {
			a.traceRoll[u.f.TraceID] = -1
		}
	}
	for i := 0; i < len(us) && !a.runCalls; i++ {
		a.runCalls = us[i].info.runCall()
	}
}
