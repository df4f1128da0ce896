package main

import (
	"fmt"
	"strings"

	"github.com/nemo-gym/gymtrace/gate"
	"github.com/nemo-gym/gymtrace/model"
)

// SourceGymVersionFlag is the variant source when --gym-version chose it.
const sourceGymVersionFlag = "--gym-version"

// variantChoice is the Gym variant in use and what chose it.
type variantChoice struct {
	V      *gate.Variant
	Source string // "--gym-version", what the capture showed, or why the newest
}

// pinnedVariant resolves --gym-version; ok is false when it was not given.
func pinnedVariant(flagVal string) (c variantChoice, ok bool, err error) {
	if strings.TrimSpace(flagVal) == "" {
		return variantChoice{}, false, nil
	}
	v, err := gate.LookupVariant(flagVal)
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
	v, source := gate.DetectVariant(snap)
	return variantChoice{v, source}, nil
}

// variantJSON is the pair of keys every --json output carries.
type variantJSON struct {
	GymVariant       string `json:"gym_variant"`
	GymVariantSource string `json:"gym_variant_source"`
}

func (c variantChoice) json() variantJSON { return variantJSON{c.V.Name, c.Source} }

// String is the variant as the TUI header and text reports show it.
func (c variantChoice) String() string { return "Gym " + c.V.Name + " (" + c.Source + ")" }

// loadRegistry returns the variant's registry, extended by a groups file.
func loadRegistry(c variantChoice, groupsFile string) (*gate.Registry, error) {
	if groupsFile == "" {
		return c.V.Registry(), nil
	}
	reg, err := c.V.Registry().LoadFile(groupsFile)
	if err != nil {
		return nil, fmt.Errorf("--groups: %w", err)
	}
	return reg, nil
}
