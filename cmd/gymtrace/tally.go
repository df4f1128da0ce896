package main

import (
	"time"

	"github.com/nemo-gym/gymtrace/gate"
	"github.com/nemo-gym/gymtrace/model"
)

// tallier counts a store's rollouts by gate's one rule for the headless
// faces (status line, JSON summary), as the TUI and check count them. Its
// engine keeps its caches across snapshots, so a tick costs what changed.
type tallier struct {
	eng  *gate.Engine
	seq  uint64
	last gate.Tally
	have bool
}

func newTallier(reg *gate.Registry) *tallier {
	if reg == nil {
		reg = gate.Default()
	}
	return &tallier{eng: gate.NewEngine(reg)}
}

// live is the tally beside a running job: rollouts still waiting for their
// root are in flight, and fresh ones pending.
func (t *tallier) live(snap *model.Snapshot, now time.Time) gate.Tally {
	if t.have && snap.Seq == t.seq && t.last.Job != gate.JobRunning {
		return t.last
	}
	t.last = t.eng.Check(snap, now, gate.LiveGrace).Tally(now, gate.JobQuiet)
	t.seq, t.have = snap.Seq, true
	return t.last
}

// final is the tally once the receivers stopped: every rollout judged, as
// `check` judges the record.
func (t *tallier) final(snap *model.Snapshot) gate.Tally {
	t.have = false
	return t.eng.Check(snap, time.Now(), 0).Tally(time.Now(), 0)
}
