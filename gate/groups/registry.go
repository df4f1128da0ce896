package groups

import (
	"errors"
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"
)

// Group is a span group, as a bit index into a Set.
type Group uint8

// The groups of every NeMo Gym variant. The values are bits of a Set, the
// same in every variant's registry; a variant that lacks a group (G1 has no
// startup, G2 no training groups) simply does not know its name.
const (
	Job Group = iota
	Server
	HTTPClient
	Rollout
	Agent
	ModelCall
	Verify
	Sandbox
	Concurrency
	Checkpoint
	Evaluate
	ModelInit
	LoadCheckpoint
	Step
	ForwardBackward
	Optimizer
	Startup
	numBuiltin
)

// builtinNames spells each built-in group as Gym does. A variant file's group
// of one of these names takes the constant's bit.
var builtinNames = [numBuiltin]string{
	Job: "job", Server: "server", HTTPClient: "http_client", Rollout: "rollout", Agent: "agent",
	ModelCall: "model_call", Verify: "verify", Sandbox: "sandbox", Concurrency: "concurrency",
	Checkpoint: "checkpoint", Evaluate: "evaluate", ModelInit: "model_init", LoadCheckpoint: "load_checkpoint",
	Step: "step", ForwardBackward: "forward_backward", Optimizer: "optimizer", Startup: "startup",
}

// Unclassified is the pseudo-group of spans no rule matches. It is never in a
// Set: unclassified spans are always kept.
const Unclassified Group = 63

// Ungated is the pseudo-group of spans that no Gym group gates: the aiohttp
// client instrumentation's CLIENT spans (NeMo-RL turns it on), which exist
// and inject traceparent whatever span_groups says. Never in a spec; kept.
const Ungated Group = 62

// MaxGroups bounds built-in plus user-defined groups.
const MaxGroups = 62

// Set is a set of groups. Membership is one bit test: the gate in front of a
// span site costs a shift, an and and a compare.
type Set uint64

// Has reports whether g is in the set.
func (s Set) Has(g Group) bool { return s&(1<<g) != 0 }

// With returns the set with g added.
func (s Set) With(g Group) Set { return s | 1<<g }

// Without returns the set with g removed.
func (s Set) Without(g Group) Set { return s &^ (1 << g) }

// Toggle returns the set with g flipped.
func (s Set) Toggle(g Group) Set { return s ^ (1 << g) }

// Len returns the number of groups in the set.
func (s Set) Len() int { return bits.OnesCount64(uint64(s)) }

// GroupInfo describes one group.
type GroupInfo struct {
	// Group is the group's bit.
	Group       Group
	Name        string
	Description string
	// Spans names the spans the group gates, for help text.
	Spans string
	// EmitsSpans is false for groups no Gym code emits spans under
	// (concurrency is a metric; the training groups are inherited).
	EmitsSpans bool
	// Metric names the metric a span-less group gates, so a preview can
	// show the group at work (ConcurrencyMetric for concurrency); empty
	// when the group gates no metric.
	Metric string
}

// ConcurrencyMetric is the histogram Gym records, per request, of the time
// spent waiting on a concurrency semaphore: the concurrency group's only
// signal.
const ConcurrencyMetric = "gym.concurrency.queue_wait_duration_ms"

// Preset is a named set of groups.
type Preset struct {
	Name        string
	Description string
	Groups      []Group
}

// Registry holds the groups, presets, classification rules and spec grammar
// of one NeMo Gym variant (see Variant), possibly extended by a groups file.
// A Registry is immutable once built and safe for concurrent use.
type Registry struct {
	// groups is indexed by Group. Built-in groups the variant lacks hold a
	// placeholder (their name, not in known), so a Group constant never
	// indexes past the slice.
	groups  []GroupInfo
	known   Set
	order   []Group // the known groups, in registry order
	presets []Preset
	rules   []Rule

	variant string
	// drop: Gym drops a name it does not know, with a warning (G2 on);
	// otherwise an unknown name switches telemetry off (G1).
	drop bool
	// openAll: "all" is every known group (G2 on); otherwise it is the
	// fixed set allFixed.
	openAll  bool
	allFixed Set
}

// Default returns the registry of the newest Gym variant.
func Default() *Registry { return Newest().Registry() }

// Variant returns the name of the Gym variant the registry describes.
func (r *Registry) Variant() string { return r.variant }

// Groups returns the registry's groups in registry order. Built-in groups
// the variant lacks are not listed.
func (r *Registry) Groups() []GroupInfo {
	out := make([]GroupInfo, len(r.order))
	for i, g := range r.order {
		out[i] = r.groups[g]
	}
	return out
}

// Table returns every group slot, indexed by Group: the registry's groups
// and a placeholder for each built-in group the variant lacks. Read-only.
func (r *Registry) Table() []GroupInfo { return r.groups }

// Known reports whether g is one of the registry's groups (never the
// pseudo-groups Unclassified and Ungated).
func (r *Registry) Known(g Group) bool { return g < MaxGroups && r.known.Has(g) }

// Presets returns every preset.
func (r *Registry) Presets() []Preset { return r.presets }

// Info returns the description of g.
func (r *Registry) Info(g Group) GroupInfo {
	if g == Unclassified {
		return GroupInfo{Group: g, Name: "unclassified", Description: "spans no rule matches; always kept"}
	}
	if g == Ungated {
		return GroupInfo{Group: g, Name: "aiohttp", Description: "aiohttp client instrumentation's CLIENT spans: gated by no Gym group, kept and injecting traceparent under every spec"}
	}
	if int(g) < len(r.groups) {
		return r.groups[g]
	}
	return GroupInfo{Group: g, Name: fmt.Sprintf("group%d", g)}
}

// Name returns the name of g.
func (r *Registry) Name(g Group) string { return r.Info(g).Name }

// Lookup returns the known group with the given (lower-case) name.
func (r *Registry) Lookup(name string) (Group, bool) {
	for _, g := range r.order {
		if r.groups[g].Name == name {
			return g, true
		}
	}
	return 0, false
}

// All returns the set of every known group.
func (r *Registry) All() Set { return r.known }

// AllFixed reports whether the all preset is a fixed list (G1) rather than
// every known group (G2 on).
func (r *Registry) AllFixed() bool { return !r.openAll }

// PresetSet returns the groups of a preset. "all" is the variant's: a fixed
// set (G1) or every known group (G2 on).
func (r *Registry) PresetSet(name string) (Set, bool) {
	for _, p := range r.presets {
		if p.Name == name {
			if p.Name == "all" {
				if r.openAll {
					return r.All(), true
				}
				return r.allFixed, true
			}
			var s Set
			for _, g := range p.Groups {
				s = s.With(g)
			}
			return s, true
		}
	}
	return 0, false
}

// ErrUnknownGroup is wrapped by Parse errors for names that are neither a
// group nor a preset.
var ErrUnknownGroup = errors.New("unknown span group")

// ErrEmptySpec is returned by Parse for a spec with no names.
var ErrEmptySpec = errors.New("empty span_groups spec")

// Parse resolves a span_groups spec: comma-separated presets and groups,
// case-insensitive, whitespace-trimmed, empty parts ignored; the union.
func (r *Registry) Parse(spec string) (Set, error) {
	var s Set
	n := 0
	var unknown []string
	for _, part := range strings.Split(spec, ",") {
		name := strings.ToLower(strings.TrimSpace(part))
		if name == "" {
			continue
		}
		n++
		if p, ok := r.PresetSet(name); ok {
			s |= p
			continue
		}
		if g, ok := r.Lookup(name); ok {
			s = s.With(g)
			continue
		}
		unknown = append(unknown, name)
	}
	if len(unknown) > 0 {
		return 0, fmt.Errorf("%w %s in span_groups %q%s; valid presets: %s; valid groups: %s",
			ErrUnknownGroup, quoteList(unknown), spec, r.didYouMean(unknown), strings.Join(r.presetNames(), ", "), strings.Join(r.groupNames(), ", "))
	}
	if n == 0 {
		return 0, fmt.Errorf("%w: name at least one preset (%s) or group", ErrEmptySpec, strings.Join(r.presetNames(), ", "))
	}
	return s, nil
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

func (r *Registry) presetNames() []string {
	out := make([]string, len(r.presets))
	for i, p := range r.presets {
		out[i] = p.Name
	}
	return out
}

func (r *Registry) groupNames() []string {
	out := make([]string, len(r.order))
	for i, g := range r.order {
		out[i] = r.groups[g].Name
	}
	return out
}

// Names returns the names of the groups in s, sorted.
func (r *Registry) Names(s Set) []string {
	var out []string
	for _, g := range r.order {
		if s.Has(g) {
			out = append(out, r.groups[g].Name)
		}
	}
	sort.Strings(out)
	return out
}

// Format returns the shortest spec for s: a preset name when s equals a
// preset, a preset plus extra groups when s is a superset of one, else the
// group list in registry order. Parse(Format(s)) == s.
func (r *Registry) Format(s Set) string {
	best, bestExtra := "", Set(0)
	for _, p := range r.presets {
		ps, _ := r.PresetSet(p.Name)
		if s&ps != ps {
			continue
		}
		extra := s &^ ps
		if best == "" || extra.Len() < bestExtra.Len() {
			best, bestExtra = p.Name, extra
		}
	}
	var parts []string
	if best != "" && bestExtra.Len() < s.Len()-1 {
		parts = append(parts, best)
		s = bestExtra
	}
	for _, g := range r.order {
		if s.Has(g) {
			parts = append(parts, r.groups[g].Name)
		}
	}
	return strings.Join(parts, ",")
}

// silent returns the groups that change nothing Gym emits: no spans, no
// metric (the inherited training groups). concurrency is not silent: it
// gates a metric.
func (r *Registry) silent() Set {
	var s Set
	for _, g := range r.order {
		if info := r.groups[g]; !info.EmitsSpans && info.Metric == "" {
			s = s.With(g)
		}
	}
	return s
}

// Spec returns the spec a user would write for s: the shortest of Format(s)
// and the Format of s with the silent groups (training groups no Gym code
// emits under) all removed or all added. Gym emits exactly the same
// telemetry under each, so the copy-out and the panel title use it: taking
// job out of "all" reads "per_rollout,sandbox", not a list of nine groups.
func (r *Registry) Spec(s Set) string {
	best := r.Format(s)
	quiet := r.silent()
	for _, alt := range []Set{s &^ quiet, s | quiet} {
		if alt == 0 {
			continue
		}
		if f := r.Format(alt); len(f) < len(best) {
			best = f
		}
	}
	return best
}

// didYouMean suggests, for each unknown name, the preset or group it is a
// typo of (at most two edits away), as " (did you mean "x"?)".
func (r *Registry) didYouMean(unknown []string) string {
	var sugg []string
	for _, u := range unknown {
		best, bestD := "", 3
		for _, name := range append(r.presetNames(), r.groupNames()...) {
			if d := editDistance(u, name); d < bestD {
				best, bestD = name, d
			}
		}
		if best != "" {
			sugg = append(sugg, strconv.Quote(best))
		}
	}
	if len(sugg) == 0 {
		return ""
	}
	return " (did you mean " + strings.Join(sugg, ", ") + "?)"
}

// editDistance is the Damerau-Levenshtein distance (adjacent swaps count
// one), the shape of most typos.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
