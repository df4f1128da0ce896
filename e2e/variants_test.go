package e2e

import (
	"slices"
	"sort"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gymsim"
)

// TestSimVariantsMatchReader: gymsim resolves span_groups on its own (it
// may not import gate), so its variants are a second entry of what
// gate/groups/variants/*.yaml says. Both entries must agree: the same
// variants, groups, presets, driver, Gym version and treatment of an
// unknown name, and the same groups for every spec a run may be given.
func TestSimVariantsMatchReader(t *testing.T) {
	simNames, readNames := slices.Clone(gymsim.VariantNames()), groups.VariantNames()
	sort.Strings(simNames)
	readSorted := slices.Clone(readNames)
	sort.Strings(readSorted)
	if !slices.Equal(simNames, readSorted) {
		t.Fatalf("gymsim's variants %v, the reader's %v", simNames, readSorted)
	}
	for _, name := range readNames {
		t.Run(name, func(t *testing.T) {
			sim, err := gymsim.LookupVariant(name)
			if err != nil {
				t.Fatal(err)
			}
			rv, err := groups.LookupVariant(name)
			if err != nil {
				t.Fatal(err)
			}
			reg := rv.Registry()
			sorted := func(xs []string) []string {
				xs = slices.Clone(xs)
				sort.Strings(xs)
				return xs
			}
			if got, want := sorted(sim.Groups), sorted(reg.Names(reg.All())); !slices.Equal(got, want) {
				t.Errorf("groups: gymsim %v, reader %v", got, want)
			}
			var readPresets []string
			for _, p := range reg.Presets() {
				readPresets = append(readPresets, p.Name)
			}
			var simPresets []string
			for p := range sim.Presets {
				simPresets = append(simPresets, p)
			}
			if got, want := sorted(append(simPresets, "all")), sorted(readPresets); !slices.Equal(got, want) {
				t.Errorf("presets: gymsim %v and all, reader %v", got, want)
			}
			for p, gs := range sim.Presets {
				set, ok := reg.PresetSet(p)
				if got, want := sorted(gs), sorted(reg.Names(set)); !ok || !slices.Equal(got, want) {
					t.Errorf("preset %s: gymsim %v, reader %v", p, got, want)
				}
			}
			if sim.UnknownOff == rv.DropsUnknown() {
				t.Errorf("an unknown name: gymsim switches telemetry off %v, the reader drops it %v", sim.UnknownOff, rv.DropsUnknown())
			}
			// A variant the reader cannot detect (G2 ships under no version
			// of its own) names no versions or driver to compare.
			if len(rv.GymVersions) > 0 && !slices.Contains(rv.GymVersions, sim.GymVersion) {
				t.Errorf("gymsim ships as %s, the reader knows %v", sim.GymVersion, rv.GymVersions)
			}
			if len(rv.DriverTypes) > 0 && !slices.Contains(rv.DriverTypes, sim.Driver) {
				t.Errorf("gymsim's driver %s, the reader's %v", sim.Driver, rv.DriverTypes)
			}
			// Not " , ": gymsim takes a value of only commas for the
			// default, the reader for no groups, and which Gym does is not
			// settled by its grammar ("skip empty parts"; "blank means
			// default").
			specs := append(append([]string{"", "  ", "all", "ALL", "nope", "default,nope", "default,,rollout"}, simPresets...), sim.Groups...)
			for _, g := range sim.Groups {
				specs = append(specs, "default,"+g, g+", per_rollout")
			}
			for _, spec := range specs {
				s, r := sim.Resolve(spec), reg.Resolve(spec)
				if s.On == r.Off {
					t.Errorf("Resolve(%q): gymsim on %v, reader off %v", spec, s.On, r.Off)
					continue
				}
				if !s.On {
					continue
				}
				var simOn []string
				for g, on := range s.Groups {
					if on {
						simOn = append(simOn, g)
					}
				}
				if got, want := sorted(simOn), sorted(reg.Names(r.Set)); !slices.Equal(got, want) {
					t.Errorf("Resolve(%q): gymsim %v, reader %v", spec, got, want)
				}
			}
		})
	}
}
