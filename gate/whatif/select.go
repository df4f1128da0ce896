package whatif

import (
	"github.com/nemo-gym/gymtrace/gate/filter"
	"github.com/nemo-gym/gymtrace/model"
)

// Select returns snap narrowed to the rollouts, as gate finds them by
// structure, that f matches (run-level traffic dropped, gym.job spans
// kept), or snap itself when f is empty.
func (e *Engine) Select(snap *model.Snapshot, f *filter.Filter) *model.Snapshot {
	if f.Empty() {
		return snap
	}
	st := e.Structure(snap).Snap
	return st.Select(f.Rollouts(st))
}
