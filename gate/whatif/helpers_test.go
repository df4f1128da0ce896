package whatif

import (
	"testing"

	"github.com/nemo-gym/gymtrace/gate/groups"
)

// g1c is the registry most tests were written against: G1's groups plus
// concurrency, whose metric they exercise.
func g1c() *groups.Registry { return variant(nil, "G1c").Registry() }

func variant(t testing.TB, name string) *groups.Variant {
	v, err := groups.LookupVariant(name)
	if err != nil {
		if t == nil {
			panic(err)
		}
		t.Fatal(err)
	}
	return v
}

var training = []groups.Group{groups.Checkpoint, groups.Evaluate, groups.ModelInit, groups.LoadCheckpoint, groups.Step, groups.ForwardBackward, groups.Optimizer}
