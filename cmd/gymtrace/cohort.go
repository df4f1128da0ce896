package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/nemo-gym/gymtrace/gate/cohort"
	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/filter"
	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/gate/whatif"
)

// cohortJSON is the documented schema of `diff --cohort --json`
// (README.md, "Compare cohorts"), shared with the MCP cohort tool.
type cohortJSON = report.Cohort

// runCohort is `diff --cohort`: the capture's rollouts split by filters and
// compared feature by feature.
func runCohort(su *setup, cohortText, baselineText string, top int, asJSON bool, files []string, bFrom bool, stdout io.Writer) int {
	switch {
	case cohortText == "":
		return su.failUsage("--baseline needs --cohort")
	case bFrom:
		return su.failUsage("--cohort compares rollouts of one capture: --b-from does not apply")
	case len(files) == 0:
		return su.failUsage("no capture files given")
	case top < 0:
		return su.fail("--top %d: want a count >= 0", top)
	}
	// Filters are checked before the capture is read, and bound to the
	// evidence once it is.
	if _, err := filter.Parse(cohortText); err != nil {
		return su.fail("--cohort: %v", err)
	}
	if _, err := filter.Parse(baselineText); err != nil {
		return su.fail("--baseline: %v", err)
	}
	c, err := su.open(files, readOptions{})
	if err != nil {
		return su.fail("%v", err)
	}
	defer c.store.Close()
	ev, err := su.joinEvidence(c.reg, c.snap)
	if err != nil {
		return su.fail("%v", err)
	}
	cf, err := parseWhere("--cohort", cohortText, ev)
	if err != nil {
		return su.fail("%v", err)
	}
	var bf *filter.Filter
	if baselineText != "" {
		if bf, err = parseWhere("--baseline", baselineText, ev); err != nil {
			return su.fail("%v", err)
		}
	}
	var lookup func(string) *evidence.Outcome
	if ev != nil {
		lookup = ev.Lookup
	}
	cmp, err := cohort.CompareWith(whatif.NewEngine(c.reg), c.snap, cf, bf, lookup)
	if err != nil {
		return su.fail("%v", err)
	}
	out := report.NewCohort(c.vc.json(), cohortText, baselineText, cmp, top)
	rows := cmp.Rows
	if top > 0 && len(rows) > top {
		rows = rows[:top]
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return su.fail("%v", err)
		}
		return exitOK
	}
	w := stdout
	base := "the other rollouts"
	if baselineText != "" {
		base = baselineText
	}
	fmt.Fprintf(w, "cohort %s: %d %s; baseline (%s): %d\n", cohortText, len(cmp.Cohort), plural(len(cmp.Cohort), "rollout", "rollouts"), base, len(cmp.Baseline))
	if cmp.Overlap > 0 {
		fmt.Fprintf(w, "%d %s in both, counted on each side\n", cmp.Overlap, plural(cmp.Overlap, "rollout is", "rollouts are"))
	}
	fmt.Fprintf(w, "effect: Cliff's delta, +1 when every cohort rollout is above every baseline one, -1 below, 0 alike\n")
	if len(cmp.Rows) > len(rows) {
		fmt.Fprintf(w, "the %d of %d differing rows that differ most (--top 0 prints all):\n", len(rows), len(cmp.Rows))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "#\teffect\tmetric\tcohort\tbaseline\tkind\tfeature\n")
	for i, r := range rows {
		fmt.Fprintf(tw, "%d\t%+.2f\t%s\t%s\t%s\t%s\t%s%s\n", i+1, r.Effect, r.Metric, metricText(r.Metric, r.Cohort), metricText(r.Metric, r.Baseline),
			r.Feature.Kind, r.Feature, sameText(r.Same))
	}
	tw.Flush()
	fmt.Fprintf(w, "variant: %s\n", c.vc)
	return exitOK
}

// metricText is a mean as the text report shows it: spans per rollout, or
// a percentage.
func metricText(m cohort.Metric, v float64) string { return m.Format(v) }

// sameText names the features a row stands for, a few at most.
func sameText(fs []cohort.Feature) string {
	if len(fs) == 0 {
		return ""
	}
	var names []string
	for i, f := range fs {
		if i == 3 {
			names = append(names, fmt.Sprintf("%d more", len(fs)-3))
			break
		}
		names = append(names, f.String())
	}
	return " (= " + strings.Join(names, ", ") + ")"
}
