package gymsim

import (
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"slices"
	"sort"
	"strings"
)

// Group names as Gym spells them. The fleet resolves span_groups itself, as
// each Gym process does, so it does not depend on how a reader classifies
// spans.
const (
	GroupJob         = "job"
	GroupStartup     = "startup"
	GroupServer      = "server"
	GroupHTTPClient  = "http_client"
	GroupRollout     = "rollout"
	GroupVerify      = "verify"
	GroupAgent       = "agent"
	GroupModelCall   = "model_call"
	GroupSandbox     = "sandbox"
	GroupConcurrency = "concurrency"
	// GroupAIOHTTP marks the aiohttp client instrumentation's spans in the
	// truth: no Gym group gates them.
	GroupAIOHTTP = "aiohttp"
)

// trainingGroups are nemo-lens's groups that G1 registers beside Gym's own.
var trainingGroups = []string{"job", "checkpoint", "evaluate", "model_init", "load_checkpoint", "step", "forward_backward", "optimizer"}

// Variant is one lineage of Gym's telemetry code: its groups and presets, how
// it treats an unknown name, and how its processes are named.
type Variant struct {
	Name string
	// Groups are the registered group names.
	Groups []string
	// Presets maps default and per_rollout to their groups; all is every
	// registered group.
	Presets map[string][]string
	// UnknownOff: an unknown name raises in the telemetry set-up, which
	// leaves the process without telemetry (G1). Otherwise the name is
	// dropped with a warning and the rest applies.
	UnknownOff bool
	// Driver is the server name of the process that starts the servers and
	// collects rollouts (orchestrator, or supervisor in G3).
	Driver string
	// GymVersion is the resource's nemo.gym.version.
	GymVersion string
	// Startup: the driver traces the servers' start-up (gym.startup and
	// gym.server.startup trees).
	Startup bool
	// DisconnectReceive: a middleware reads every request (an http receive
	// of http.request, whatever the method) and then listens for the
	// client's disconnect: a second http receive, cancelled without an
	// event type once the answer is sent (see Config.DisconnectRace).
	DisconnectReceive bool
	// NVDLResource: the resource also carries nv.dl.rank and
	// nv.dl.world_size, beside the dl.* keys nemo-lens still adds.
	NVDLResource bool
	// QueueWaitMetric: the agent records gym.concurrency.queue_wait_duration_ms
	// under the concurrency group.
	QueueWaitMetric bool
}

var (
	g1Groups = append(slices.Clone(trainingGroups), GroupServer, GroupHTTPClient, GroupRollout, GroupVerify, GroupAgent, GroupModelCall, GroupSandbox)
	g2Groups = []string{GroupJob, GroupServer, GroupHTTPClient, GroupRollout, GroupVerify, GroupAgent, GroupModelCall, GroupSandbox}
	perRoll  = []string{GroupServer, GroupHTTPClient, GroupRollout, GroupVerify, GroupAgent, GroupModelCall}
	defaults = []string{GroupJob, GroupServer, GroupHTTPClient, GroupRollout}
)

// variants are Gym's telemetry variants, by name.
var variants = map[string]*Variant{
	"G1": {
		Name: "G1", Groups: g1Groups, UnknownOff: true, Driver: "orchestrator", GymVersion: "0.5.1",
		Presets: map[string][]string{"default": defaults, "per_rollout": perRoll},
	},
	"G1c": {
		Name: "G1c", Groups: append(slices.Clone(g1Groups), GroupConcurrency), UnknownOff: true, Driver: "orchestrator", GymVersion: "0.5.1",
		Presets:         map[string][]string{"default": defaults, "per_rollout": append(slices.Clone(perRoll), GroupConcurrency)},
		QueueWaitMetric: true,
	},
	"G2": {
		Name: "G2", Groups: g2Groups, Driver: "orchestrator", GymVersion: "0.6.0",
		Presets: map[string][]string{"default": defaults, "per_rollout": perRoll},
	},
	"G3": {
		Name: "G3", Groups: append(slices.Clone(g2Groups), GroupStartup), Driver: "supervisor", GymVersion: "0.7.0rc0",
		Presets:           map[string][]string{"default": {GroupJob, GroupStartup, GroupServer, GroupHTTPClient, GroupRollout}, "per_rollout": perRoll},
		Startup:           true,
		DisconnectReceive: true,
		NVDLResource:      true,
	},
}

// resourceKeys are the resource's keys under v, in Gym's order.
func (v *Variant) resourceKeys() []attribute.Key {
	var out []attribute.Key
	for _, k := range resourceOrder {
		if !v.NVDLResource && strings.HasPrefix(string(k), "nv.dl.") {
			continue
		}
		out = append(out, k)
	}
	return out
}

// VariantNames lists the variants --gym-variant accepts.
func VariantNames() []string { return []string{"G1", "G1c", "G2", "G3"} }

// LookupVariant returns the named variant; "" is G1.
func LookupVariant(name string) (*Variant, error) {
	if name == "" {
		name = "G1"
	}
	for k, v := range variants {
		if strings.EqualFold(k, name) {
			return v, nil
		}
	}
	return nil, fmt.Errorf("gym variant %q: want one of %s", name, strings.Join(VariantNames(), ", "))
}

// Resolution is what one process makes of its span_groups value.
type Resolution struct {
	// On is false when the set-up raised: the process runs without
	// telemetry (no spans at all, no propagation).
	On bool
	// Groups are the enabled groups.
	Groups map[string]bool
	// Warning is what the process logs: the error that switched
	// telemetry off, or the names it dropped.
	Warning string
}

// Resolve parses a span_groups value with Gym's grammar: split on commas,
// trim, lower-case, skip empty parts, union; blank means default.
func (v *Variant) Resolve(spec string) Resolution {
	groups := map[string]bool{}
	var unknown []string
	n := 0
	for _, part := range strings.Split(spec, ",") {
		name := strings.ToLower(strings.TrimSpace(part))
		if name == "" {
			continue
		}
		n++
		switch {
		case name == "all":
			for _, g := range v.Groups {
				groups[g] = true
			}
		case v.Presets[name] != nil:
			for _, g := range v.Presets[name] {
				groups[g] = true
			}
		case slices.Contains(v.Groups, name):
			groups[name] = true
		default:
			unknown = append(unknown, name)
		}
	}
	if n == 0 {
		for _, g := range v.Presets["default"] {
			groups[g] = true
		}
	}
	if len(unknown) == 0 {
		return Resolution{On: true, Groups: groups}
	}
	if v.UnknownOff {
		valid := append(slices.Clone(v.Groups), "all", "default", "per_rollout")
		sort.Strings(valid)
		quoted := make([]string, len(valid))
		for i, s := range valid {
			quoted[i] = "'" + s + "'"
		}
		return Resolution{Groups: map[string]bool{}, Warning: fmt.Sprintf("Unknown span group or preset: '%s'. Valid options: [%s]", unknown[0], strings.Join(quoted, ", "))}
	}
	return Resolution{On: true, Groups: groups, Warning: fmt.Sprintf("unknown span groups dropped: %s", strings.Join(unknown, ", "))}
}
