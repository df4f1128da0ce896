package whatif

import (
	"fmt"
	"sort"

	"github.com/nemo-gym/gymtrace/gate/groups"
)

// Gap is a group the previewed spec keeps that a process did not emit when
// the capture was made (its own span_groups had it off): the spans that
// group would add are not in the capture, so the preview counts fewer.
type Gap struct {
	Service string
	Group   groups.Group // server or http_client
	Cause   Cause        // the capture's finding that shows it
}

// String says the gap in one sentence.
func (g Gap) String(reg *groups.Registry) string {
	return g.Service + " emitted no " + reg.Name(g.Group) + " spans when captured: " + g.Cause.Finding(g.Service, g.Service)
}

// JoinVerdict is the one joining verdict of a spec over a capture that CLI
// and TUI both show: the preview's joined and split rollouts, with what
// the capture itself says folded in.
type JoinVerdict struct {
	Joined, Split, Pending int
	// Gaps lists what the capture lacks that the spec would emit; with any,
	// the preview's span counts are a lower bound.
	Gaps []Gap
	// SplitIDs are the rollouts split under the spec, sorted.
	SplitIDs []string
}

// IsSplit reports whether the rollout is split under the spec.
func (v JoinVerdict) IsSplit(id string) bool {
	i := sort.SearchStrings(v.SplitIDs, id)
	return i < len(v.SplitIDs) && v.SplitIDs[i] == id
}

// String says the verdict as every face prints it: "✓ intact 20/20",
// "✗ 20/20 split", "✓ 3/5 +2 pending"; "no rollouts yet" when there is
// nothing to judge, never a green ✓.
func (v JoinVerdict) String() string {
	n := v.Joined + v.Split + v.Pending
	switch {
	case v.Pending > 0 && v.Split > 0:
		return fmt.Sprintf("✗ %d/%d +%d pending", v.Split, n, v.Pending)
	case v.Pending > 0:
		return fmt.Sprintf("✓ %d/%d +%d pending", v.Joined, n, v.Pending)
	case v.Split > 0:
		return fmt.Sprintf("✗ %d/%d split", v.Split, n)
	case n == 0:
		return "no rollouts yet"
	}
	return fmt.Sprintf("✓ intact %d/%d", v.Joined, n)
}

// Captured is the capture's join as it was, from its own check (nil:
// nothing judged), over the rollouts rep looks at (nil: all): what check
// says, beside a spec's prediction, which reads the capture as if every
// process had run that spec.
func Captured(chk *CheckReport, rep *Report) JoinVerdict {
	v := JoinVerdict{}
	if chk == nil {
		return v
	}
	count := func(id string, rc RolloutCheck) {
		switch rc.Status {
		case Split:
			v.Split++
			v.SplitIDs = append(v.SplitIDs, id)
		case JoinPending:
			v.Pending++
		default:
			v.Joined++
		}
	}
	if rep == nil {
		for id, rc := range chk.ByRollout {
			count(id, rc)
		}
	} else {
		for _, pr := range rep.PerRollout {
			if rc, ok := chk.ByRollout[pr.ID]; ok {
				count(pr.ID, rc)
			}
		}
	}
	sort.Strings(v.SplitIDs)
	return v
}

// LowerBoundNote says what a lower bound means, in the words every face
// prints before the gaps.
const LowerBoundNote = "the capture lacks spans this spec emits, so spans, bytes and traces are lower bounds"

// LowerBound reports whether the capture lacks spans the spec would emit.
func (v JoinVerdict) LowerBound() bool { return len(v.Gaps) > 0 }

// Verdict is rep's joining read together with the capture's own check (nil:
// rep alone):
//   - a rollout still pending in the check (in flight, or too fresh to
//     judge) is pending, as the list and the status line say;
//   - a rollout the preview joins is joined: the pieces the capture split
//     off are dropped under the spec (or one job span holds them);
//   - a split rollout whose pieces the spec did not cut, and that the
//     capture split only through gaps the spec fills (a process had server
//     or http_client off; the spec has them on), is joined: under the spec
//     those processes would propagate;
//   - every other split rollout is split.
func Verdict(rep *Report, chk *CheckReport) JoinVerdict {
	v := JoinVerdict{}
	if rep == nil {
		return v
	}
	gaps := map[Gap]bool{}
	fills := func(h BrokenHop) bool {
		if h.Cause == CauseUnattributed {
			// Its caller sent no traceparent or it read none: a spec with
			// both halves on propagates either way.
			return rep.Spec.Has(groups.Server) && rep.Spec.Has(groups.HTTPClient)
		}
		g, ok := gapOf(h)
		return ok && rep.Spec.Has(g.Group)
	}
	if chk != nil {
		for _, h := range chk.Hops {
			if g, ok := gapOf(h); ok && rep.Spec.Has(g.Group) {
				gaps[g] = true
			}
		}
	}
	for _, pr := range rep.PerRollout {
		if pr.Spans == 0 {
			continue // neither joined nor split: nothing of it is kept
		}
		joined := pr.Joined
		if chk != nil {
			if rc, ok := chk.ByRollout[pr.ID]; ok {
				switch {
				case rc.Status == JoinPending:
					// In flight or too fresh: every face says pending.
					v.Pending++
					continue
				case joined:
				case rc.Status == Split && len(pr.Breaks) == 0 && len(rc.Hops) > 0:
					joined = true
					for _, h := range rc.Hops {
						joined = joined && fills(h)
					}
				}
			}
		}
		if joined {
			v.Joined++
		} else {
			v.Split++
			v.SplitIDs = append(v.SplitIDs, pr.ID)
		}
	}
	for g := range gaps {
		v.Gaps = append(v.Gaps, g)
	}
	sort.Slice(v.Gaps, func(i, j int) bool {
		a, b := v.Gaps[i], v.Gaps[j]
		if a.Service != b.Service {
			return a.Service < b.Service
		}
		return a.Group < b.Group
	})
	sort.Strings(v.SplitIDs)
	return v
}

// gapOf is the process and group a capture's finding shows off.
func gapOf(h BrokenHop) (Gap, bool) {
	svc := h.Args[0]
	switch h.Cause {
	case CauseNoServerChild:
		return Gap{Service: svc, Group: groups.Server, Cause: h.Cause}, svc != ""
	case CauseNewTrace:
		return Gap{Service: h.Args[1], Group: groups.Server, Cause: h.Cause}, h.Args[1] != ""
	case CauseServerRoot:
		return Gap{Service: svc, Group: groups.HTTPClient, Cause: h.Cause}, svc != "" && svc != "the caller"
	}
	return Gap{}, false
}
