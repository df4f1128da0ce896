package main

import (
	"time"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// tallier counts a store's rollouts by gate's one rule for the headless
// faces (status line, JSON summary), as the TUI and check count them. Its
// engine keeps its caches across snapshots, so a tick costs what changed.
type tallier struct {
	eng  *whatif.Engine
	seq  uint64
	last whatif.Tally
	have bool
}

func newTallier(reg *groups.Registry) *tallier {
	if reg == nil {
		reg = groups.Default()
	}
	return &tallier{eng: whatif.NewEngine(reg)}
}

// live is the tally beside a running job: rollouts still waiting for their
// root are in flight, and fresh ones pending.
func (t *tallier) live(snap *model.Snapshot, now time.Time) whatif.Tally {
	if t.have && snap.Seq == t.seq && t.last.Job != whatif.JobRunning {
		return t.last
	}
	t.last = t.eng.Check(snap, now, whatif.LiveGrace).Tally(now, whatif.JobQuiet)
	t.seq, t.have = snap.Seq, true
	return t.last
}

// final is the tally once the receivers stopped: every rollout judged, as
// `check` judges the record.
func (t *tallier) final(snap *model.Snapshot) whatif.Tally {
	t.have = false
	return t.eng.Check(snap, time.Now(), 0).Tally(time.Now(), 0)
}
