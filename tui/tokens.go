package tui

import (
	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/model"
)

// rolloutTokens is the token usage of the shown rollout, read once per
// rollout version: Gym's own spans carry none, a model backend's may.
type rolloutTokens struct {
	keys rollouts.TokenKeys
	t    rollouts.Tokens
}

func (rt *rolloutTokens) set(snap *model.Snapshot, r *model.Rollout) {
	rt.t = rollouts.Tokens{}
	if snap == nil || r == nil {
		return
	}
	rt.keys.Resolve(snap.Interner())
	rt.t = rt.keys.Rollout(r)
}

// title is the trace header's part about tokens: "" when none reported.
func (rt *rolloutTokens) title() string {
	t := rt.t
	if !t.Present() {
		return ""
	}
	// Short: the title is clipped to the panel, and the span detail
	// lists each call's attributes.
	return " · tokens " + fmtCount(t.Input) + " in / " + fmtCount(t.Output) + " out"
}
