package main

import (
	"flag"
	"fmt"

	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/filter"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// whereUsage is the --where flag's help, shared by every command that takes it.
const whereUsage = "only rollouts matching this filter, e.g. 'status=error service=policy_model dur>2s' (syntax: gymtrace help filters)"

// whereFlag registers --where on fs.
func whereFlag(fs *flag.FlagSet) *string { return fs.String("where", "", whereUsage) }

// selectWhere narrows snap to the rollouts matching where, reading ev for
// the evidence terms; an empty filter returns snap itself.
func selectWhere(reg *groups.Registry, snap *model.Snapshot, where string, ev *evidence.Joined) (*model.Snapshot, error) {
	f, err := parseWhere("--where", where, ev)
	if err != nil {
		return nil, err
	}
	return whatif.NewEngine(reg).Select(snap, f), nil
}

// parseWhere parses a filter given by flag, bound to ev; an evidence term
// without evidence is an error that says what to give.
func parseWhere(flagName, where string, ev *evidence.Joined) (*filter.Filter, error) {
	f, err := filter.Parse(where)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	if f.UsesEvidence() {
		if ev == nil {
			return nil, fmt.Errorf("%s %q: reward, verdict, failure and task are read from Gym's files: give them with --evidence PATH", flagName, where)
		}
		f = f.WithEvidence(ev.Lookup)
	}
	return f, nil
}
