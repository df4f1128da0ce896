package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/nemo-gym/gymtrace/gate/groups"
)

func cmdGroups(args []string) int { return runGroups(args, os.Stdout, os.Stderr) }

type groupsJSON struct {
	variantJSON
	Groups  []groupInfoJSON  `json:"groups"`
	Presets []presetInfoJSON `json:"presets"`
	Rules   []ruleJSON       `json:"rules"`
}

type groupInfoJSON struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Spans       string `json:"spans"`
	EmitsSpans  bool   `json:"emits_spans"`
	Metric      string `json:"metric,omitempty"` // the metric a span-less group gates
}

type presetInfoJSON struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Groups      []string `json:"groups"`
}

type ruleJSON struct {
	Order int    `json:"order"`
	Group string `json:"group"`
	Match string `json:"match"`
}

func runGroups(args []string, stdout, stderr io.Writer) int {
	su := newSetup("groups", stderr, "usage: gymtrace groups [--gym-version V] [--groups FILE] [--json]\n\n")
	su.variantFlags("the groups to list; default: the newest")
	asJSON := su.fs.Bool("json", false, "print groups, presets and rules as JSON")
	if code, done := su.parseNoArgs(args); done {
		return code
	}
	vc, reg, err := su.registry("newest: no capture to tell from")
	if err != nil {
		return su.fail("%v", err)
	}
	out := groupsJSON{variantJSON: vc.json()}
	for _, g := range reg.Groups() {
		out.Groups = append(out.Groups, groupInfoJSON{g.Name, g.Description, g.Spans, g.EmitsSpans, g.Metric})
	}
	for _, p := range reg.Presets() {
		s, _ := reg.PresetSet(p.Name)
		out.Presets = append(out.Presets, presetInfoJSON{p.Name, p.Description, reg.Names(s)})
	}
	for i, r := range reg.Rules() {
		g := reg.Name(r.Group)
		if r.Attr != "" {
			g = "(named by the attribute)"
		}
		out.Rules = append(out.Rules, ruleJSON{i + 1, g, r.String()})
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return su.fail("%v", err)
		}
		return exitOK
	}
	fmt.Fprintf(stdout, "variant: %s: %s; an unknown name %s; all is %s\n\n", vc, vc.V.Description, unknownEffect(vc.V), allKind(reg))
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSPANS\tDESCRIPTION")
	for _, g := range out.Groups {
		spans := g.Spans
		if !g.EmitsSpans {
			spans = "(none)"
			if g.Metric != "" {
				spans = "(metric " + g.Metric + ")"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", g.Name, spans, g.Description)
	}
	tw.Flush()
	fmt.Fprintln(stdout)
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PRESET\tGROUPS\tDESCRIPTION")
	for _, p := range out.Presets {
		gs := strings.Join(p.Groups, ",")
		if p.Name == "all" && !reg.AllFixed() {
			gs = "(every group)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name, gs, p.Description)
	}
	tw.Flush()
	fmt.Fprintln(stdout, "\nclassification rules (first match wins; anything else is unclassified and always kept):")
	for _, r := range out.Rules {
		fmt.Fprintf(stdout, "  %2d. %-26s %s\n", r.Order, r.Group, r.Match)
	}
	return exitOK
}

func unknownEffect(v *groups.Variant) string {
	if v.DropsUnknown() {
		return "is dropped with a warning"
	}
	return "switches telemetry off in every process"
}

// allKind says whether the registry's all preset is a fixed list or every
// registered group.
func allKind(reg *groups.Registry) string {
	if reg.AllFixed() {
		return "a fixed list"
	}
	return "every registered group"
}
