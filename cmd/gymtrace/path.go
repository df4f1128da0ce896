package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nemo-gym/gymtrace/gate/critpath"
	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/gate/whatif"
)

func cmdPath(args []string) int { return runPath(args, os.Stdout, os.Stderr) }

// pathJSON is the documented schema of `path --json` (README.md,
// "Critical path"), shared with the MCP critical_path tool.
type pathJSON = report.Path

// ms3 is nanoseconds as milliseconds to the microsecond.
func ms3(ns int64) float64 { return report.MS3(ns) }

func runPath(args []string, stdout, stderr io.Writer) int {
	su := newSetup("path", stdout, stderr, "usage: gymtrace path [--json] ROLLOUT FILE...\n\n"+
		"The rollout's critical path: the chain of spans that owns its wall time, each segment with its\n"+
		"service, span and own time, adding up to the rollout's duration, and which process holds it.\n\n")
	fs := su.fs
	su.variantFlags("the capture; default: detected from the capture, else the newest")
	su.evidenceFlag()
	asJSON := fs.Bool("json", false, "print the path as JSON (schema: the README's critical path section)")
	pos, code, done := su.parse(args)
	if done {
		return code
	}
	if len(pos) < 2 {
		return su.failUsage("want ROLLOUT and at least one capture file")
	}
	id, files := pos[0], pos[1:]
	c, err := su.open(files, readOptions{})
	if err != nil {
		return su.fail("%v", err)
	}
	defer c.store.Close()
	snap := whatif.NewEngine(c.reg).Structure(c.snap).Snap
	r, err := findRollout(snap, id)
	if err != nil {
		return su.fail("rollout %v", err)
	}
	p := critpath.Find(snap, r)
	out := report.NewPath(c.vc.json(), r.ID, p)
	ev, err := su.joinEvidence(c.reg, c.snap)
	if err != nil {
		return su.fail("%v", err)
	}
	if ev != nil {
		out.Evidence = ev.Rollout(r.ID)
	}
	var sum int64
	for _, s := range p.Segments {
		sum += s.Self()
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return su.fail("%v", err)
		}
		return exitOK
	}
	w := stdout
	fmt.Fprintf(w, "rollout %s: %v, critical path of %d segments adding up to %v (%.1f%%)\n", r.ID, dur(p.Duration()),
		len(p.Segments), dur(sum), 100*share(sum, p.Duration()))
	var held []string
	for _, h := range p.Holders {
		held = append(held, fmt.Sprintf("%s %v (%.1f%%)", h.Holder.Text(), dur(h.Duration), 100*share(h.Duration, p.Duration())))
	}
	fmt.Fprintf(w, "held by: %s\n", strings.Join(held, ", "))
	if out.Evidence != nil {
		fmt.Fprintf(w, "evidence: %s\n", evidenceText(out.Evidence))
	}
	if p.Grafted+p.Unplaced > 0 {
		fmt.Fprintf(w, "split rollout: %d cut-off %s hung under the calls that made them, %d under none\n", p.Grafted,
			plural(p.Grafted, "fragment", "fragments"), p.Unplaced)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "at\tself\tholder\tservice\tspan\n")
	for _, s := range p.Segments {
		name := "(no span running)"
		if s.Span != nil {
			name = strings.Repeat("  ", s.Depth) + s.Name
		}
		fmt.Fprintf(tw, "+%v\t%v\t%s\t%s\t%s\n", dur(s.Start-p.Start), dur(s.Self()), s.Holder.Text(), s.Service, name)
	}
	tw.Flush()
	fmt.Fprintf(w, "variant: %s\n", c.vc)
	return exitOK
}

func dur(ns int64) time.Duration { return time.Duration(ns).Round(time.Microsecond) }

func share(part, whole int64) float64 { return report.Share(part, whole) }
