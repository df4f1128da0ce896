package groups

import (
	"fmt"
	"sort"
	"strings"

	"github.com/nemo-gym/gymtrace/model"
)

// GymVersionAttr is the resource attribute Gym reports its version in.
const GymVersionAttr = "nemo.gym.version"

// DetectVariant tells from a capture which Gym variant emitted it, first
// hit wins: the resource nemo.gym.version, then the suffix of a process's
// service.name (the driver's), then span and metric names only one variant
// emits. Among variants sharing a version or a driver name (G1 and G1c) the
// names decide, else the oldest of them. When nothing tells it returns the
// newest variant and says so. source says what decided, for the user.
func DetectVariant(snap *model.Snapshot) (v *Variant, source string) {
	vs := Variants()
	if snap == nil {
		return Newest(), "newest: nothing captured yet"
	}
	in := snap.Interner()
	seen := namesOf(snap)
	var unknownVersions []string
	resources := in.Resources()
	for _, res := range resources {
		val, ok := res.Attrs.Get(in, GymVersionAttr)
		if !ok {
			continue
		}
		ver := val.String()
		var cands []*Variant
		for _, v := range vs {
			if contains(v.GymVersions, ver) {
				cands = append(cands, v)
			}
		}
		if len(cands) > 0 {
			return refine(cands, seen, fmt.Sprintf("resource %s=%s", GymVersionAttr, ver))
		}
		if !contains(unknownVersions, ver) {
			unknownVersions = append(unknownVersions, ver)
		}
	}
	for _, res := range resources {
		name := in.Str(res.Service)
		var cands []*Variant
		suffix := ""
		for _, v := range vs {
			for _, s := range v.DriverSuffixes {
				if strings.HasSuffix(name, s) {
					cands, suffix = append(cands, v), s
				}
			}
		}
		if len(cands) > 0 {
			return refine(cands, seen, fmt.Sprintf("service.name %s (driver ends %s)", name, suffix))
		}
	}
	for i := len(vs) - 1; i >= 0; i-- {
		if hit := seen.match(vs[i].Names); hit != "" {
			return vs[i], hit
		}
	}
	why := "nothing in the capture tells"
	if len(unknownVersions) > 0 {
		why = fmt.Sprintf("%s %s is no known variant's and nothing else tells", GymVersionAttr, strings.Join(unknownVersions, ", "))
	}
	return Newest(), "newest: " + why
}

// refine picks among variants that share a version or driver name: the
// newest whose own names the capture holds, else the oldest.
func refine(cands []*Variant, seen captured, source string) (*Variant, string) {
	for i := len(cands) - 1; i >= 0; i-- {
		if hit := seen.match(cands[i].Names); hit != "" {
			return cands[i], source + ", " + hit
		}
	}
	return cands[0], source
}

// captured holds the distinct span and metric names of a capture.
type captured struct {
	spans, metrics []string
}

func namesOf(snap *model.Snapshot) captured {
	in := snap.Interner()
	ids := map[model.Str]bool{}
	add := func(f *model.Fragment) {
		for i := range f.Spans {
			ids[f.Spans[i].Name] = true
		}
	}
	for _, r := range snap.Rollouts {
		for _, f := range r.Fragments {
			add(f)
		}
	}
	for _, f := range snap.Jobs {
		add(f)
	}
	var c captured
	for id := range ids {
		c.spans = append(c.spans, in.Str(id))
	}
	for name := range snap.Metrics {
		c.metrics = append(c.metrics, name)
	}
	sort.Strings(c.spans)
	sort.Strings(c.metrics)
	return c
}

// match returns "span NAME" or "metric NAME" for the first captured name a
// pattern matches, empty when none does.
func (c captured) match(patterns []string) string {
	for _, p := range patterns {
		rule, ok := patternRule(p)
		if !ok {
			continue
		}
		for _, n := range c.spans {
			if rule.nameMatches(n) {
				return "span " + n
			}
		}
		for _, n := range c.metrics {
			if rule.nameMatches(n) {
				return "metric " + n
			}
		}
	}
	return ""
}

// nameMatches applies the rule's name, prefix and suffix to name.
func (rule *Rule) nameMatches(name string) bool {
	return (rule.Name == "" || name == rule.Name) &&
		strings.HasPrefix(name, rule.Prefix) && strings.HasSuffix(name, rule.Suffix)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
