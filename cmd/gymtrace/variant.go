package main

import (
	"fmt"
	"strings"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/model"
)

// SourceGymVersionFlag is the variant source when --gym-version chose it.
const sourceGymVersionFlag = "--gym-version"

// variantChoice is the Gym variant in use and what chose it.
type variantChoice struct {
	V      *groups.Variant
	Source string // "--gym-version", what the capture showed, or why the newest
}

// pinnedVariant resolves --gym-version; ok is false when it was not given.
func pinnedVariant(flagVal string) (c variantChoice, ok bool, err error) {
	if strings.TrimSpace(flagVal) == "" {
		return variantChoice{}, false, nil
	}
	v, err := groups.LookupVariant(flagVal)
	if err != nil {
		return variantChoice{}, false, fmt.Errorf("--gym-version: %w", err)
	}
	return variantChoice{v, sourceGymVersionFlag}, true, nil
}

// chooseVariant returns --gym-version's variant, else the one snap shows
// (snap nil: nothing to tell from, the newest).
func chooseVariant(flagVal string, snap *model.Snapshot) (variantChoice, error) {
	c, ok, err := pinnedVariant(flagVal)
	if err != nil || ok {
		return c, err
	}
	v, source := groups.DetectVariant(snap)
	return variantChoice{v, source}, nil
}

// variantJSON is the pair of keys every --json output carries.
type variantJSON = report.Variant

func (c variantChoice) json() variantJSON { return report.VariantOf(c.V, c.Source) }

// String is the variant as the TUI header and text reports show it.
func (c variantChoice) String() string { return "Gym " + c.V.Name + " (" + c.Source + ")" }

// loadRegistry returns the variant's registry, extended by a groups file.
func loadRegistry(c variantChoice, groupsFile string) (*groups.Registry, error) {
	if groupsFile == "" {
		return c.V.Registry(), nil
	}
	reg, err := c.V.Registry().LoadFile(groupsFile)
	if err != nil {
		return nil, fmt.Errorf("--groups: %w", err)
	}
	return reg, nil
}

// redetectUpTo is how many spans a live capture may hold without telling
// its Gym variant before the newest is kept for good (telling reads every
// span name, so it is not repeated for ever).
const redetectUpTo = 100_000

// liveVariant settles the variant of a live capture from its first spans,
// for an interface opened before anything arrived: nil when --gym-version
// pinned it. A variant the capture shows is taken with its registry and
// the spec read under it; a spec that variant refuses keeps what is shown.
func liveVariant(gymVersion, groupsFile, spec string) func(*model.Snapshot) (*uiConfig, bool) {
	if strings.TrimSpace(gymVersion) != "" {
		return nil
	}
	return func(snap *model.Snapshot) (*uiConfig, bool) {
		if snap == nil || snap.Stats.Stored == 0 {
			return nil, false
		}
		v, source := groups.DetectVariant(snap)
		if strings.HasPrefix(source, "newest") {
			return nil, snap.Stats.Stored >= redetectUpTo
		}
		vc := variantChoice{v, source}
		reg, err := loadRegistry(vc, groupsFile)
		if err != nil {
			return nil, true
		}
		res := reg.Resolve(spec)
		if res.Off || res.Set == 0 {
			return nil, true
		}
		return &uiConfig{Registry: reg, Current: res.Set, CurrentSpec: spec, Variant: vc.String()}, true
	}
}
