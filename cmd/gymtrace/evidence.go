package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/rollouts"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/tui"
)

// evidenceUsage is --evidence's help, shared by every command that takes it.
const evidenceUsage = "Gym's outcome files beside the traces (rollouts.jsonl, *_failures.jsonl, *_materialized_inputs.jsonl, " +
	"rollout_verdicts.jsonl, model-call captures; a file or a folder; repeatable): rewards, failures and verdicts joined to rollouts"

// evidenceFlag registers the repeatable --evidence.
func (s *setup) evidenceFlag() {
	s.fs.Func("evidence", evidenceUsage, func(v string) error {
		if v == "" {
			return fmt.Errorf("--evidence wants a file or folder")
		}
		s.evidence = append(s.evidence, v)
		return nil
	})
}

// readEvidence reads --evidence, nil without it.
func (s *setup) readEvidence() (*evidence.Set, error) {
	if len(s.evidence) == 0 {
		return nil, nil
	}
	return evidence.Read(s.evidence...)
}

// joinEvidence reads --evidence and joins it to snap's rollouts (files are
// read after the run: a dispatched attempt with no outcome was killed);
// nil without the flag.
func (s *setup) joinEvidence(reg *groups.Registry, snap *model.Snapshot) (*evidence.Joined, error) {
	set, err := s.readEvidence()
	if set == nil || err != nil {
		return nil, err
	}
	return evidence.Join(set, whatif.NewEngine(reg).Structure(snap), true), nil
}

// rejoin narrows ev to the rollouts a report covers (those a --where
// kept), so its coverage is of them.
func rejoin(ev *evidence.Joined, st *rollouts.Structure) *evidence.Joined {
	return ev.Within(st)
}

// evidenceSummary is the JSON block of a report, nil without evidence.
func evidenceSummary(ev *evidence.Joined) *evidence.SummaryJSON {
	if ev == nil {
		return nil
	}
	s := ev.Summary()
	return &s
}

// rolloutEvidence maps each joined rollout to its block.
func rolloutEvidence(ev *evidence.Joined, st *rollouts.Structure) map[string]*evidence.RolloutJSON {
	if ev == nil {
		return nil
	}
	out := map[string]*evidence.RolloutJSON{}
	for _, r := range st.Rollouts {
		if b := ev.Rollout(r.ID); b != nil {
			out[r.ID] = b
		}
	}
	return out
}

// writeEvidenceText prints the evidence lines of a text report: what was
// read and joined, the tasks that sometimes pass, the contradictions.
func writeEvidenceText(w io.Writer, ev *evidence.Joined) {
	if ev == nil {
		return
	}
	fmt.Fprintln(w, ev.Line())
	sum := ev.Summary()
	if r := sum.Rewards; r.Rewarded > 0 {
		fmt.Fprintf(w, "  rewards: %d rewarded, mean %.4g, %d at 0; %d failed\n", r.Rewarded, *r.Mean, r.Zero, r.Failed)
	}
	if n := len(sum.Tasks); n > 0 {
		var parts []string
		for i, t := range sum.Tasks {
			if i == 8 {
				parts = append(parts, fmt.Sprintf("… %d more", n-i))
				break
			}
			parts = append(parts, fmt.Sprintf("task %d %d/%d", t.Task, t.Passed, t.Attempts))
		}
		fmt.Fprintf(w, "  sometimes passes: %s\n", strings.Join(parts, ", "))
	}
	if len(sum.Conflicts) > 0 {
		kinds := make([]string, 0, len(sum.Conflicts))
		for k := range sum.Conflicts {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		for _, line := range ev.ContradictionLines(10) {
			fmt.Fprintf(w, "  contradiction %s\n", line)
		}
	}
}

// evidenceText is a rollout's evidence on one line.
func evidenceText(b *evidence.RolloutJSON) string {
	parts := []string{b.State}
	if b.Reward != nil {
		parts = append(parts, fmt.Sprintf("reward=%.4g", *b.Reward))
	}
	if b.FailureClass != "" {
		parts = append(parts, "failure="+b.FailureClass)
	}
	if b.Verdict != "" {
		v := "verdict=" + b.Verdict
		if b.Finding != "" {
			v += " (" + b.Finding + ")"
		}
		parts = append(parts, v)
	}
	for _, n := range []struct {
		name string
		v    *int
	}{{"task", b.Task}, {"turns", b.Turns}, {"tool_calls", b.ToolCalls}, {"input_tokens", b.InputTokens}, {"output_tokens", b.OutputTokens}, {"model_calls", b.ModelCalls}} {
		if n.v != nil {
			parts = append(parts, fmt.Sprintf("%s=%d", n.name, *n.v))
		}
	}
	if b.LatencyMS != nil {
		parts = append(parts, fmt.Sprintf("latency=%.0fms", *b.LatencyMS))
	}
	return strings.Join(parts, " ") + " (" + b.Join + " join)"
}

// evidenceFeed reads --evidence once, failing on a path that cannot be
// read, and returns what the TUI polls: with live set, the files read
// again for what they gained; without, the first read's set.
func (s *setup) evidenceFeed(live bool) (tui.EvidenceFunc, error) {
	if len(s.evidence) == 0 {
		return nil, nil
	}
	r := evidence.NewReader(s.evidence...)
	first, _, err := r.Poll()
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	given := false
	return func() (*evidence.Set, bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if !given {
			given = true
			return first, true, nil
		}
		if !live {
			return first, false, nil
		}
		return r.Poll()
	}, nil
}
