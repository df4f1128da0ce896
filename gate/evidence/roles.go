package evidence

import (
	"github.com/nemo-gym/gymtrace/model"
)

// roles tells the model server's requests apart, by Gym's resource
// attribute nemo.gym.server.type, cached per resource.
type roles struct {
	snap  *model.Snapshot
	model map[model.ResourceID]bool
}

func newRoles(snap *model.Snapshot) *roles {
	return &roles{snap: snap, model: map[model.ResourceID]bool{}}
}

func (r *roles) isModel(id model.ResourceID) bool {
	v, ok := r.model[id]
	if !ok {
		res := r.snap.Resource(id)
		s, has := res.Attrs.Get(r.snap.Interner(), "nemo.gym.server.type")
		v = has && s.String() == "responses_api_models"
		r.model[id] = v
	}
	return v
}

// eachModelCall calls fn with each SERVER span of a model server in r.
func (r *roles) eachModelCall(roll *model.Rollout, fn func(*model.Span)) {
	for _, f := range roll.Fragments {
		for i := range f.Spans {
			sp := &f.Spans[i]
			if sp.Kind == model.KindServer && r.isModel(sp.Resource) {
				fn(sp)
			}
		}
	}
}

// modelCalls counts r's model-server requests and those that failed;
// served is false when the trace has none to count (the model process had
// server off, say), so no comparison is made.
func (r *roles) modelCalls(roll *model.Rollout) (calls, errs int, served bool) {
	r.eachModelCall(roll, func(sp *model.Span) {
		calls++
		if sp.Status == model.StatusError {
			errs++
		}
	})
	return calls, errs, calls > 0
}
