package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

func cmdExport(args []string) int { return runExport(args, os.Stdout, os.Stderr) }

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	*l = append(*l, s)
	return nil
}

func runExport(args []string, stdout, stderr io.Writer) int {
	su := newSetup("export", stdout, stderr, "usage: gymtrace export [--rollout ID]... [--where FILTER] [--spec S] -o OUT.jsonl FILE...\n\n"+
		"Writes rollouts of a capture as OTLP/JSON lines, which gymtrace open, otel-tui --from-json-file\n"+
		"and the Collector's otlpjsonfile receiver read.\n\n")
	fs := su.fs
	var ids listFlag
	fs.Var(&ids, "rollout", "export this rollout (repeatable; default: every rollout the --where filter matches)")
	where := whereFlag(fs)
	su.evidenceFlag()
	spec := fs.String("spec", "", "write the spans as they would be under this span_groups spec, read as the capture's Gym variant reads it: only kept spans, reparented to their nearest kept ancestor")
	su.variantFlags("the capture; default: detected from the capture, else the newest")
	outPath := fs.String("o", "", "output file (OTLP/JSON lines; - for stdout); required")
	files, code, done := su.parse(args)
	if done {
		return code
	}
	fail := su.fail
	if *outPath == "" {
		return su.failUsage("-o OUT.jsonl is required")
	}
	if len(files) == 0 {
		return su.failUsage("no capture files given")
	}
	// The spec means what the capture's Gym variant makes of it.
	c, err := su.open(files, readOptions{})
	if err != nil {
		return fail("%v", err)
	}
	defer c.store.Close()
	snap, reg := c.snap, c.reg
	var set *groups.Set
	if s, ok, err := su.appliedFlag(reg, *spec, "spec"); err != nil {
		return fail("%v", err)
	} else if ok {
		set = &s
	}
	ev, err := su.joinEvidence(reg, snap)
	if err != nil {
		return fail("%v", err)
	}
	if snap, err = selectWhere(reg, snap, *where, ev); err != nil {
		return fail("%v", err)
	}
	eng := whatif.NewEngine(reg)
	var spans model.Batch
	var what string
	if len(ids) == 0 && *where == "" {
		// Everything: rollouts, run-level traffic, unattributed pieces.
		spans = eng.ExportAll(snap, set)
		what = "the capture"
	} else {
		rollouts, err := pickRollouts(eng.Structure(snap).Snap, ids)
		if err != nil {
			return fail("%v", err)
		}
		if len(rollouts) == 0 {
			return fail("no rollout matches --where %q", *where)
		}
		spans = eng.ExportSpans(snap, rollouts, set)
		what = fmt.Sprintf("%d rollout(s)", len(rollouts))
	}
	if err := writeExport(*outPath, stdout, snap.Interner(), spans); err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(stderr, "exported %d spans of %s to %s\n", len(spans.Spans), what, *outPath)
	return exitOK
}

// pickRollouts returns the rollouts named by ids, in the order given, or
// every rollout of snap when ids is empty.
func pickRollouts(snap *model.Snapshot, ids []string) ([]*model.Rollout, error) {
	if len(ids) == 0 {
		return snap.Rollouts, nil
	}
	byID := make(map[string]*model.Rollout, len(snap.Rollouts))
	for _, r := range snap.Rollouts {
		byID[r.ID] = r
	}
	var out []*model.Rollout
	seen := map[string]bool{}
	for _, id := range ids {
		r := byID[id]
		if r == nil {
			return nil, fmt.Errorf("--rollout %q: %w", id, noRollout(snap))
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, r)
		}
	}
	return out, nil
}

// findRollout returns the rollout of snap that id names: the whole id, or
// a unique prefix or suffix of it (rollouts.Lookup).
func findRollout(snap *model.Snapshot, id string) (*model.Rollout, error) {
	return rollouts.Lookup(snap.Rollouts, id)
}

// noRollout says that an id is not in snap, naming a few that are.
func noRollout(snap *model.Snapshot) error {
	var ids []string
	for _, r := range snap.Rollouts {
		ids = append(ids, r.ID)
	}
	if len(ids) == 0 {
		return fmt.Errorf("no such rollout in the capture (after --where, none is left)")
	}
	sort.Strings(ids)
	return fmt.Errorf("no such rollout in the capture (it holds %s)", joinMax(ids, 5))
}

// writeExport writes spans, with their trace ids, to path, or to stdout for
// "-". A file is written whole or not at all: a failed export leaves no
// half file behind.
func writeExport(path string, stdout io.Writer, in *model.Interner, spans model.Batch) error {
	if path == "-" {
		bw := bufio.NewWriter(stdout)
		if err := receiver.WriteSpansJSON(bw, in, spans); err != nil {
			return err
		}
		return bw.Flush()
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	err = receiver.WriteSpansJSON(bw, in, spans)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
