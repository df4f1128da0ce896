package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"github.com/nemo-gym/gymtrace/gate/report"
	"io"
	"strconv"
	"strings"

	"github.com/nemo-gym/gymtrace/gate/contract"
	"github.com/nemo-gym/gymtrace/gate/whatif"
)

// contractFlags are check's flags for holding a capture to a baseline.
type contractFlags struct {
	baseline  *string
	tolerance *string
}

func addContractFlags(fs *flag.FlagSet) contractFlags {
	return contractFlags{
		baseline:  fs.String("baseline", "", "a golden capture of the same Gym variant (a file, or a folder: every file under it) to hold the capture to"),
		tolerance: fs.String("tolerance", "10%", "how far spans and bytes per rollout may drift from the baseline, e.g. 10% or 0.1"),
	}
}

// parseTolerance reads 10% or 0.1 as a fraction.
func parseTolerance(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	switch {
	case err != nil || v < 0 || v != v:
		return 0, fmt.Errorf("--tolerance %q: want a share >= 0, e.g. 10%% or 0.1", s)
	case pct:
		return v / 100, nil
	case v > 1:
		return 0, fmt.Errorf("--tolerance %q: a bare number is a fraction (0.1 is 10%%); write %g%% for percent", s, v)
	}
	return v, nil
}

// baselineFiles is GOLDEN as files, as captureFiles reads a capture.
func baselineFiles(path string) ([]string, error) {
	files, err := captureFiles(path)
	if err != nil {
		return nil, fmt.Errorf("--baseline: %w", err)
	}
	return files, nil
}

// contractJSON is the documented schema of `check --baseline --json`
// (README.md, "A telemetry contract for CI").
type contractJSON struct {
	variantJSON
	Pass          bool          `json:"pass"`
	Tolerance     float64       `json:"tolerance"`
	BaselineFiles []string      `json:"baseline_files"`
	Baseline      profileJSON   `json:"baseline"`
	Current       profileJSON   `json:"current"`
	Findings      []findingJSON `json:"findings"`
	ContextLeaks  []hopJSON     `json:"context_leaks"`
	BadLines      badLinesJSON  `json:"bad_lines"`
}

type profileJSON struct {
	Spans             int       `json:"spans"`
	Rollouts          int       `json:"rollouts"`
	Bytes             int64     `json:"bytes"`
	SpansPerRollout   float64   `json:"spans_per_rollout"`
	BytesPerRollout   float64   `json:"bytes_per_rollout"`
	BrokenHops        []hopJSON `json:"broken_hops"`
	UnclassifiedSpans int       `json:"unclassified_spans"`
	OrphanSpans       int       `json:"orphan_spans"`
	Secrets           int       `json:"secrets"`
}

type findingJSON struct {
	Kind         string   `json:"kind"`
	Message      string   `json:"message"`
	Hop          *hopJSON `json:"hop,omitempty"`
	JoinedBefore *int     `json:"joined_before,omitempty"`
	Baseline     *float64 `json:"baseline,omitempty"`
	Current      *float64 `json:"current,omitempty"`
	Change       *float64 `json:"change,omitempty"`
	Service      string   `json:"service,omitempty"`
	Span         string   `json:"span,omitempty"`
	Count        int      `json:"count,omitempty"`
	Key          string   `json:"key,omitempty"`
	Reason       string   `json:"reason,omitempty"`
	Sample       string   `json:"sample,omitempty"`
}

func profileOut(p *contract.Profile) profileJSON {
	out := profileJSON{Spans: p.Spans, Rollouts: p.Rollouts, Bytes: p.Bytes,
		SpansPerRollout: round2(p.SpansPerRollout), BytesPerRollout: round2(p.BytesPerRollout), BrokenHops: []hopJSON{}}
	for _, h := range p.Broken {
		out.BrokenHops = append(out.BrokenHops, hopOut(h))
	}
	for _, n := range p.Unclassified {
		out.UnclassifiedSpans += n
	}
	for _, n := range p.Orphans {
		out.OrphanSpans += n
	}
	for _, s := range p.Secrets {
		out.Secrets += s.Count
	}
	return out
}

func hopOut(h whatif.BreakSum) hopJSON {
	return report.HopOf(h)
}

func findingOut(f contract.Finding) findingJSON {
	out := findingJSON{Kind: f.Kind.String(), Message: f.String()}
	switch f.Kind {
	case contract.HopBroke:
		h := hopOut(f.Hop)
		n := f.JoinedBefore
		out.Hop, out.JoinedBefore = &h, &n
	case contract.SpansDrift, contract.BytesDrift:
		b, c, ch := round2(f.Baseline), round2(f.Current), round4(f.Change)
		out.Baseline, out.Current, out.Change = &b, &c, &ch
	case contract.Unclassified, contract.Orphans:
		out.Service, out.Span, out.Count = f.Where.Service, f.Where.Span, f.Count
		if f.Kind == contract.Orphans {
			b := float64(f.BaselineCount)
			out.Baseline = &b
		}
	case contract.SecretValue:
		out.Service, out.Span, out.Count = f.Secret.Service, f.Secret.Span, f.Secret.Count
		out.Key, out.Reason, out.Sample = f.Secret.Key, f.Secret.Reason, f.Secret.Sample
	}
	return out
}

// runContract is `check --baseline`: both captures read with their own
// variant, which must be one, and the capture held to the baseline.
func runContract(su *setup, cf contractFlags, files []string, where string, asJSON bool, stdout io.Writer) int {
	tol, err := parseTolerance(*cf.tolerance)
	if err != nil {
		return su.fail("%v", err)
	}
	golden, err := baselineFiles(*cf.baseline)
	if err != nil {
		return su.fail("%v", err)
	}
	c, err := su.open(files, readOptions{})
	if err != nil {
		return su.fail("%v", err)
	}
	defer c.store.Close()
	b, err := su.open(golden, readOptions{})
	if err != nil {
		return su.fail("--baseline: %v", err)
	}
	defer b.store.Close()
	if b.vc.V.Name != c.vc.V.Name {
		return su.fail("--baseline %s is %s, the capture %s: a contract holds within one Gym variant (--gym-version reads both as one)", *cf.baseline, b.vc, c.vc)
	}
	snapC, err := selectWhere(c.reg, c.snap, where, nil)
	if err != nil {
		return su.fail("%v", err)
	}
	snapB, _ := selectWhere(b.reg, b.snap, where, nil)
	rep := contract.Compare(contract.Measure(whatif.NewEngine(b.reg), snapB), contract.Measure(whatif.NewEngine(c.reg), snapC), tol)
	code := exitOK
	if !rep.Pass() {
		code = exitBroken
	}
	if asJSON {
		out := contractJSON{variantJSON: c.vc.json(), Pass: rep.Pass(), Tolerance: round4(tol), BaselineFiles: golden,
			Baseline: profileOut(rep.Baseline), Current: profileOut(rep.Current), Findings: []findingJSON{},
			ContextLeaks: []hopJSON{}, BadLines: badLines(c.frep)}
		for _, f := range rep.Findings {
			out.Findings = append(out.Findings, findingOut(f))
		}
		for _, h := range rep.Leaks {
			out.ContextLeaks = append(out.ContextLeaks, hopOut(h))
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return su.fail("%v", err)
		}
		return code
	}
	w := stdout
	status := "holds"
	if !rep.Pass() {
		status = fmt.Sprintf("BROKEN, %d %s", len(rep.Findings), plural(len(rep.Findings), "finding", "findings"))
	}
	fmt.Fprintf(w, "contract against %s (%d %s): %s\n", *cf.baseline, len(golden), plural(len(golden), "file", "files"), status)
	for _, side := range []struct {
		name string
		p    *contract.Profile
	}{{"baseline", rep.Baseline}, {"capture ", rep.Current}} {
		fmt.Fprintf(w, "  %s: %d spans, %d rollouts, %.2f spans/rollout, %.0f bytes/rollout, %d broken %s\n", side.name,
			side.p.Spans, side.p.Rollouts, side.p.SpansPerRollout, side.p.BytesPerRollout, side.p.BrokenJoins(), plural(side.p.BrokenJoins(), "hop", "hops"))
	}
	for _, f := range rep.Findings {
		fmt.Fprintf(w, "  %s: %s\n", f.Kind, f)
	}
	if len(rep.Leaks) > 0 {
		fmt.Fprintf(w, "context leaks (not held against the contract: whether a run shows them depends on timing):\n")
		for _, h := range rep.Leaks {
			fmt.Fprintf(w, "  %s %s\n", whatif.HopName(h, "->", keepName), hopCounts(h))
		}
	}
	fmt.Fprintf(w, "tolerance %.0f%%; variant: %s\n", 100*tol, c.vc)
	return code
}
