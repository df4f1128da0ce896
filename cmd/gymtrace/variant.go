package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/nemo-gym/gymtrace/gate"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// SourceGymVersionFlag is the variant source when --gym-version chose it.
const sourceGymVersionFlag = "--gym-version"

// gymVersionFlag adds --gym-version to fs.
func gymVersionFlag(fs *flag.FlagSet) *string {
	return fs.String("gym-version", "", "the Gym telemetry variant ("+strings.Join(gate.VariantNames(), ", ")+
		") or Gym version that emitted the capture; default: detected from the capture, else the newest")
}

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

// currentSet resolves the setting in force as Gym does. Names Gym drops are
// reported on warn; a spec Gym refuses (telemetry off) is an error, since
// there is nothing to compare against.
func currentSet(reg *gate.Registry, spec, source string, warn io.Writer) (gate.Set, error) {
	res := reg.Resolve(spec)
	if res.Off {
		return 0, fmt.Errorf("span_groups %q from %s: %s", spec, source, res.Effect())
	}
	if len(res.Dropped) > 0 {
		fmt.Fprintf(warn, "gymtrace: span_groups %q from %s: %s\n", spec, source, res.Effect())
	}
	return res.Set, nil
}

// captures is what every command that reads capture files starts from: the
// loaded store, what reading reported, and the Gym variant and registry the
// capture's specs are read with.
type captures struct {
	store *model.Store
	snap  *model.Snapshot
	frep  receiver.FileReport
	vc    variantChoice
	reg   *gate.Registry
}

// openCaptures checks --gym-version before reading anything, reads files,
// then picks the variant (--gym-version, else what the capture shows) and
// its registry, extended by --groups. On error nothing is left open.
func openCaptures(files []string, gymVersion, groups string) (*captures, error) {
	if _, _, err := pinnedVariant(gymVersion); err != nil {
		return nil, err
	}
	store, snap, frep, err := loadCaptures(files)
	if err == nil {
		c := &captures{store: store, snap: snap, frep: frep}
		if c.vc, err = chooseVariant(gymVersion, snap); err == nil {
			if c.reg, err = loadRegistry(c.vc, groups); err == nil {
				return c, nil
			}
		}
	}
	store.Close()
	return nil, err
}
