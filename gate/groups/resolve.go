package groups

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Resolution is what Gym itself does with a span_groups value, in the
// registry's variant.
type Resolution struct {
	// Spec is the value as written.
	Spec string
	// Set is the groups Gym enables; 0 when Off.
	Set Set
	// Default is true when the value was blank: Gym applies its default preset.
	Default bool
	// Off is true when Gym refuses the value (G1: an unknown name raises in
	// setup_telemetry, Gym catches it and runs on with telemetry switched
	// off in every process: no spans at all).
	Off bool
	// Dropped lists the names Gym ignores with a warning (G2 on), in spec
	// order, each once; the rest of the spec applies.
	Dropped []string
	// Message is Gym's own text: the ValueError when Off, the warning when
	// names are dropped, else empty.
	Message string
	// Suggest is gymtrace's guess at what an unknown name was a typo of,
	// as " (did you mean "x"?)", or empty.
	Suggest string
}

// Resolve resolves spec as the registry's Gym variant does: split on commas,
// trim, lower-case, skip empty parts, union; a blank value means default.
// An unknown name switches telemetry off (G1, G1c) or is dropped (G2 on).
func (r *Registry) Resolve(spec string) Resolution {
	res := Resolution{Spec: spec}
	if strings.TrimSpace(spec) == "" {
		res.Default = true
		res.Set, _ = r.PresetSet("default")
		return res
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		name := strings.ToLower(strings.TrimSpace(part))
		if name == "" {
			continue
		}
		if p, ok := r.PresetSet(name); ok {
			res.Set |= p
			continue
		}
		if g, ok := r.Lookup(name); ok {
			res.Set = res.Set.With(g)
			continue
		}
		if !r.drop {
			// SpanGroup.resolve raises on the first unknown part.
			return Resolution{Spec: spec, Off: true, Suggest: r.didYouMean([]string{name}),
				Message: fmt.Sprintf("Unknown span group or preset: %s. Valid options: %s",
					pyRepr(name), pyList(append(r.groupNames(), r.presetNames()...)))}
		}
		if !seen[name] {
			seen[name] = true
			res.Dropped = append(res.Dropped, name)
		}
	}
	if len(res.Dropped) > 0 {
		res.Suggest = r.didYouMean(res.Dropped)
		res.Message = fmt.Sprintf("Span group spec %s names %s, which no library registered in this process provides; "+
			"nothing will be emitted for those. Registered groups: %s. Presets: %s. Namespaces: ['nemo_gym']. "+
			"If a name is real, the library that owns it was not imported here -- which is expected when several "+
			"processes share one spec, and is why this is a warning rather than an error.",
			pyRepr(spec), pyList(res.Dropped), pyList(r.groupNames()), pyList(r.presetNames()))
	}
	return res
}

// Effect says in one sentence what Gym does with the resolution, for
// warnings shown beside a preview; empty when Gym applies the spec as
// written.
func (res Resolution) Effect() string {
	switch {
	case res.Off:
		return "Gym refuses this spec and switches telemetry off in every process (no spans at all): " + res.Message + res.Suggest
	case len(res.Dropped) > 0:
		return fmt.Sprintf("Gym drops %s with a warning and applies the rest", quoteList(res.Dropped)) + res.Suggest
	}
	return ""
}

// pyRepr renders s as Python's repr of a str does (for the plain text a
// spec holds): single quotes unless s has a single quote and no double one.
func pyRepr(s string) string {
	q := "'"
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		q = `"`
	}
	var b strings.Builder
	b.WriteString(q)
	for _, c := range s {
		switch {
		case c == '\\':
			b.WriteString(`\\`)
		case string(c) == q:
			b.WriteString(`\` + q)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteString(q)
	return b.String()
}

// pyList renders names as Python prints sorted(names).
func pyList(names []string) string {
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	parts := make([]string, len(sorted))
	for i, n := range sorted {
		parts[i] = pyRepr(n)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// ErrNothingSelected is returned by CopyOut for the empty set: Gym reads a
// blank span_groups as default, so no spec selects nothing.
var ErrNothingSelected = errors.New("no group selected")

// ErrNotGymSpec is wrapped by CopyOut when the spec would not reach Gym as
// meant: the variant rejects or ignores part of it.
var ErrNotGymSpec = errors.New("not a spec this Gym variant applies as written")

// CopyOut returns the spec to hand to Gym for s: the shortest equivalent
// spec (Spec), checked against the variant's own resolution. It refuses the
// empty set, and any set the variant would reject (telemetry off) or apply
// otherwise (dropped names, other groups).
func (r *Registry) CopyOut(s Set) (string, error) {
	if s == 0 {
		return "", fmt.Errorf("%w: Gym reads a blank span_groups as default; to record nothing, set telemetry.enabled: false", ErrNothingSelected)
	}
	if extra := s &^ r.All(); extra != 0 {
		var names []string
		for g := Group(0); g < MaxGroups; g++ {
			if extra.Has(g) {
				names = append(names, r.Name(g))
			}
		}
		return "", fmt.Errorf("%w: %s %s unknown to Gym %s", ErrNotGymSpec, quoteList(names), plural(len(names), "is", "are"), r.variant)
	}
	spec := r.Spec(s)
	res := r.Resolve(spec)
	quiet := r.silent()
	switch {
	case res.Off || len(res.Dropped) > 0:
		return "", fmt.Errorf("%w: %s", ErrNotGymSpec, res.Effect())
	case res.Set&^quiet != s&^quiet:
		return "", fmt.Errorf("%w: Gym %s reads %q as %s, not %s", ErrNotGymSpec, r.variant, spec,
			strings.Join(r.Names(res.Set), ","), strings.Join(r.Names(s), ","))
	}
	return spec, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
