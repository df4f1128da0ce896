package whatif

import (
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/model"
)

// PreviewResolution is Preview of what Gym does with res. When Gym switches
// telemetry off, nothing at all is exported: every count of the result is 0,
// unclassified spans included.
func (e *Engine) PreviewResolution(snap *model.Snapshot, res groups.Resolution) *Report {
	rep := e.Preview(snap, res.Set)
	if !res.Off {
		return rep
	}
	// The engine shares rep's parts with its cache: build a new report.
	off := &Report{Structure: rep.Structure, Input: rep.Input, WallSeconds: rep.WallSeconds}
	off.Result.Dropped = rep.Input.Spans
	for _, gc := range rep.PerGroup {
		off.PerGroup = append(off.PerGroup, GroupCount{Group: gc.Group, Captured: gc.Captured})
	}
	for _, r := range rep.PerRollout {
		rr := RolloutResult{ID: r.ID, Captured: r.Captured, Fragments: r.Fragments}
		for _, gc := range r.Groups {
			rr.Groups = append(rr.Groups, GroupCount{Group: gc.Group, Captured: gc.Captured})
		}
		off.PerRollout = append(off.PerRollout, rr)
	}
	return off
}
