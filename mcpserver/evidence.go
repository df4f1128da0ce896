package mcpserver

import (
	"fmt"
	"time"

	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/filter"
	"github.com/nemo-gym/gymtrace/gate/rollouts"
)

// EvidenceFunc gives Gym's outcome files as last read: the set, and
// whether it changed since the last call (gate/evidence.Reader.Poll).
type EvidenceFunc func() (*evidence.Set, bool, error)

// liveRejoin is how often, at most, a live store's rollouts are joined to
// the files again when only the spans changed: a join reads every
// outcome, and a row's block a second or two old is still the rollout's.
const liveRejoin = 2 * time.Second

// evState is the last join, reused while neither side changed.
type evState struct {
	set *evidence.Set
	st  *rollouts.Structure
	j   *evidence.Joined
	at  time.Time
	err error // the last read's failure, said in notes
}

// joined is the evidence joined to st, nil without evidence. Called under
// mu.
func (s *Server) joined(v *view, st *rollouts.Structure) *evidence.Joined {
	if s.cfg.Evidence == nil {
		return nil
	}
	set, changed, err := s.cfg.Evidence()
	s.ev.err = err
	if err != nil || set == nil {
		set, changed = s.ev.set, false
	}
	if set == nil {
		return nil
	}
	fresh := s.ev.j != nil && s.ev.set == set && !changed &&
		(s.ev.st == st || s.cfg.Live && v.now.Sub(s.ev.at) < liveRejoin)
	if !fresh {
		s.ev = evState{set: set, st: st, j: evidence.Join(set, st, !s.cfg.Live), at: v.now}
	}
	return s.ev.j
}

// bindFilter parses a filter argument bound to ev; an evidence term
// without evidence says what to give, as the CLI does.
func bindFilter(arg, text string, ev *evidence.Joined) (*filter.Filter, error) {
	f, err := parseFilter(arg, text)
	if err != nil {
		return nil, err
	}
	if f.UsesEvidence() {
		if ev == nil {
			return nil, fmt.Errorf("%s %q: reward, verdict, failure and task are read from Gym's files: start the server with --evidence PATH", arg, text)
		}
		f = f.WithEvidence(ev.Lookup)
	}
	return f, nil
}
