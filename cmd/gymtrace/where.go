package main

import (
	"flag"
	"fmt"

	"github.com/nemo-gym/gymtrace/gate/filter"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// whereUsage is the --where flag's help, shared by every command that takes it.
const whereUsage = "only rollouts matching this filter, e.g. 'status=error service=policy_model dur>2s' (syntax: gymtrace help filters)"

// whereFlag registers --where on fs.
func whereFlag(fs *flag.FlagSet) *string { return fs.String("where", "", whereUsage) }

// selectWhere narrows snap to the rollouts matching where; an empty filter
// returns snap itself.
func selectWhere(reg *groups.Registry, snap *model.Snapshot, where string) (*model.Snapshot, error) {
	f, err := filter.Parse(where)
	if err != nil {
		return nil, fmt.Errorf("--where: %w", err)
	}
	return whatif.NewEngine(reg).Select(snap, f), nil
}
