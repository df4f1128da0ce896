package groups

import (
	"fmt"
	"sort"
	"strings"

	"github.com/nemo-gym/gymtrace/model"
)

// GymVersionAttr is the resource attribute Gym reports its version in.
const GymVersionAttr = "nemo.gym.version"

// Resource attributes of every Gym process: its server name, and its type
// (the driver's is its role: orchestrator, supervisor).
const (
	gymServerNameAttr = "nemo.gym.server.name"
	gymServerTypeAttr = "nemo.gym.server.type"
)

// DetectVariant tells from a capture which Gym variant emitted it, first
// hit wins: the resource nemo.gym.version; then the driver, by the suffix
// of its service.name or its nemo.gym.server.type; then the resource keys
// of a Gym process (G3's lens adds nv.dl.*, G1's has dl.* alone); then
// span and metric names only one variant emits. Among variants sharing a
// sign (G1 and G1c) the names decide, else the oldest of them. When
// nothing tells it returns the newest variant and says so. source names
// the evidence that decided, for the user.
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
		if cands, why := driverSigns(vs, in, res); len(cands) > 0 {
			return refine(cands, seen, why)
		}
	}
	for _, res := range resources {
		if cands, why := resourceKeySigns(vs, in, res); len(cands) > 0 {
			return refine(cands, seen, why)
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

// driverSigns returns the variants whose driver res is, by the suffix of
// its service.name or else by its nemo.gym.server.type, and the evidence.
func driverSigns(vs []*Variant, in *model.Interner, res model.Resource) ([]*Variant, string) {
	name := in.Str(res.Service)
	for _, byType := range []bool{false, true} {
		var cands []*Variant
		why := ""
		for _, v := range vs {
			if !byType {
				for _, s := range v.DriverSuffixes {
					if strings.HasSuffix(name, s) {
						cands, why = append(cands, v), fmt.Sprintf("service.name %s (driver ends %s)", name, s)
						break
					}
				}
				continue
			}
			if val, ok := res.Attrs.Get(in, gymServerTypeAttr); ok && contains(v.DriverTypes, val.String()) {
				cands, why = append(cands, v), fmt.Sprintf("resource %s=%s (%s)", gymServerTypeAttr, val.String(), name)
			}
		}
		if len(cands) > 0 {
			return cands, why
		}
	}
	return nil, ""
}

// resourceKeySigns returns the variants whose resource keys a Gym
// process's resource res shows (every key present, every !key absent),
// and the evidence. A process that is not Gym's (NeMo-RL's, whose lens
// reports dl.* alone whatever Gym runs) tells nothing.
func resourceKeySigns(vs []*Variant, in *model.Interner, res model.Resource) ([]*Variant, string) {
	if _, gym := res.Attrs.Get(in, gymServerNameAttr); !gym {
		return nil, ""
	}
	var cands []*Variant
	why := ""
	for _, v := range vs {
		if len(v.ResourceKeys) == 0 {
			continue
		}
		var has, lacks []string
		holds := true
		for _, k := range v.ResourceKeys {
			key, absent := strings.CutPrefix(k, "!")
			_, ok := res.Attrs.Get(in, key)
			if ok == absent {
				holds = false
				break
			}
			if absent {
				lacks = append(lacks, key)
			} else {
				has = append(has, key)
			}
		}
		if !holds {
			continue
		}
		if why == "" {
			var parts []string
			if len(has) > 0 {
				parts = append(parts, strings.Join(has, ", "))
			}
			if len(lacks) > 0 {
				parts = append(parts, "without "+strings.Join(lacks, ", "))
			}
			why = fmt.Sprintf("resource %s (%s)", strings.Join(parts, " "), in.Str(res.Service))
		}
		cands = append(cands, v)
	}
	return cands, why
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
