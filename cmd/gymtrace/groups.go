package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/report"
)

func cmdGroups(args []string) int { return runGroups(args, os.Stdout, os.Stderr) }

// groupsJSON is the schema of `groups --json`, shared with the MCP
// groups tool.
type groupsJSON = report.Groups

func runGroups(args []string, stdout, stderr io.Writer) int {
	su := newSetup("groups", stdout, stderr, "usage: gymtrace groups [--gym-version V] [--groups FILE] [--json]\n\n")
	su.variantFlags("the groups to list; default: the newest")
	asJSON := su.fs.Bool("json", false, "print groups, presets and rules as JSON")
	if code, done := su.parseNoArgs(args); done {
		return code
	}
	vc, reg, err := su.registry("newest: no capture to tell from")
	if err != nil {
		return su.fail("%v", err)
	}
	out := report.NewGroups(vc.json(), reg)
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
