package evidence

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// The JSON shapes of evidence, one for every face (check, preview, diff,
// path, the MCP tools): a block per rollout and a summary per report.

// RolloutJSON is what the files say of one traced rollout. Unknown fields
// are left out, never written as zero.
type RolloutJSON struct {
	Join         string   `json:"join"` // exact, inferred
	State        string   `json:"state"`
	Reward       *float64 `json:"reward,omitempty"`
	FailureClass string   `json:"failure_class,omitempty"`
	Verdict      string   `json:"verdict,omitempty"`
	Finding      string   `json:"finding,omitempty"`
	Task         *int     `json:"task,omitempty"`
	Attempt      int      `json:"attempt,omitempty"`
	Turns        *int     `json:"turns,omitempty"`
	ToolCalls    *int     `json:"tool_calls,omitempty"`
	InputTokens  *int     `json:"input_tokens,omitempty"`
	OutputTokens *int     `json:"output_tokens,omitempty"`
	LatencyMS    *float64 `json:"latency_ms,omitempty"`
	ModelCalls   *int     `json:"model_calls,omitempty"`
}

func known[N int16 | int32](n N) *int {
	if n < 0 {
		return nil
	}
	v := int(n)
	return &v
}

func knownF(f float64) *float64 {
	if math.IsNaN(f) {
		return nil
	}
	return &f
}

// Rollout returns the block of a traced rollout, nil when nothing joined.
func (j *Joined) Rollout(id string) *RolloutJSON {
	o, how := j.Of(id)
	if o == nil {
		return nil
	}
	return &RolloutJSON{Join: how.String(), State: o.State.String(), Reward: knownF(o.Reward),
		FailureClass: o.Failure, Verdict: o.Verdict.String(), Finding: o.Finding, Task: known(o.Task),
		Attempt: int(o.Attempt), Turns: known(o.Turns), ToolCalls: known(o.Tools), InputTokens: known(o.InTokens),
		OutputTokens: known(o.OutTokens), LatencyMS: knownF(o.LatencyMS), ModelCalls: known(o.Calls)}
}

// SummaryJSON is the evidence part of a report.
type SummaryJSON struct {
	Files          []FileJSON          `json:"files"`
	Coverage       CoverageJSON        `json:"coverage"`
	BadLines       int                 `json:"bad_lines"`
	BadSamples     []string            `json:"bad_line_samples"`
	Conflicts      map[string]int      `json:"contradictions_by_kind"`
	Contradictions []ContradictionJSON `json:"contradictions"`
	// Tasks lists the tasks that sometimes pass: some attempts rewarded
	// above 0, some not.
	Tasks []TaskJSON `json:"tasks_sometimes_pass"`
	// Rewards sums up the joined rollouts' rewards.
	Rewards RewardsJSON `json:"rewards"`
}

// FileJSON is one file read.
type FileJSON struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
	Rows int    `json:"rows"`
	Bad  int    `json:"bad_lines"`
}

// CoverageJSON says how many traced rollouts joined, how, and why not.
type CoverageJSON struct {
	Rollouts   int    `json:"rollouts"`
	Joined     int    `json:"joined"`
	Exact      int    `json:"exact"`
	Inferred   int    `json:"inferred"`
	NotJoined  int    `json:"not_joined"`
	Attempts   int    `json:"attempts_in_files"`
	Untraced   int    `json:"attempts_untraced"`
	Reason     string `json:"reason,omitempty"` // code
	ReasonText string `json:"reason_text,omitempty"`
	Text       string `json:"text"`
}

// ContradictionJSON is one disagreement between the files and the traces.
type ContradictionJSON struct {
	Kind    string `json:"kind"`
	Reason  string `json:"reason"`
	Rollout string `json:"rollout_id"`
	Detail  string `json:"detail,omitempty"`
}

// TaskJSON is a task's rewarded attempts.
type TaskJSON struct {
	Task     int     `json:"task"`
	Attempts int     `json:"attempts"`
	Passed   int     `json:"passed"`
	Mean     float64 `json:"mean_reward"`
}

// RewardsJSON sums up the rewards of the joined rollouts.
type RewardsJSON struct {
	Rewarded int      `json:"rewarded"`
	Zero     int      `json:"zero"`
	Mean     *float64 `json:"mean,omitempty"`
	Failed   int      `json:"failed"`
}

// Summary returns the evidence part of a report over the rollouts ids
// (the report's, a filter's selection perhaps); nil ids means all traced.
func (j *Joined) Summary() SummaryJSON {
	s := SummaryJSON{Files: []FileJSON{}, BadSamples: []string{}, Conflicts: map[string]int{},
		Contradictions: []ContradictionJSON{}, Tasks: []TaskJSON{}}
	for _, f := range j.Set.Files {
		s.Files = append(s.Files, FileJSON{Path: f.Path, Kind: f.Kind.Code(), Rows: f.Rows, Bad: f.Bad})
	}
	c := j.Coverage
	s.Coverage = CoverageJSON{Rollouts: c.Rollouts, Joined: c.Joined(), Exact: c.Exact, Inferred: c.Inferred,
		NotJoined: c.Rollouts - c.Joined(), Attempts: c.Attempts, Untraced: c.Untraced, Reason: c.Reason.Code(),
		Text: c.String()}
	if c.Reason != NoReason {
		s.Coverage.ReasonText = c.Reason.String()
	}
	s.BadLines = j.Set.BadTotal
	for _, b := range j.Set.Bad {
		s.BadSamples = append(s.BadSamples, b.String())
	}
	for k, n := range j.Conflicts {
		if n > 0 {
			s.Conflicts[Conflict(k).Code()] = n
		}
	}
	for _, x := range j.Contradictions {
		s.Contradictions = append(s.Contradictions, ContradictionJSON{Kind: x.Kind.Code(), Reason: x.Kind.String(), Rollout: x.Rollout, Detail: x.Detail})
	}
	for _, t := range j.Set.Tasks() {
		if t.Passed > 0 && t.Passed < t.Attempts {
			s.Tasks = append(s.Tasks, TaskJSON{Task: int(t.Task), Attempts: t.Attempts, Passed: t.Passed, Mean: round4(t.Mean)})
		}
	}
	s.Rewards = j.Rewards
	return s
}

func round4(f float64) float64 { return math.Round(f*1e4) / 1e4 }

func (j *Joined) rewards() RewardsJSON {
	var r RewardsJSON
	sum := 0.0
	count := func(o *Outcome) {
		switch {
		case o.HasReward():
			r.Rewarded++
			sum += o.Reward
			if o.Reward == 0 {
				r.Zero++
			}
		case o.State == Failed:
			r.Failed++
		}
	}
	for i := range j.Set.Outcomes() {
		if j.isExact(int32(i)) {
			count(&j.Set.outcomes[i])
		}
	}
	for _, i := range j.inferred {
		count(&j.Set.outcomes[i])
	}
	if r.Rewarded > 0 {
		m := round4(sum / float64(r.Rewarded))
		r.Mean = &m
	}
	return r
}

// TaskStats is one task's rewarded attempts.
type TaskStats struct {
	Task     int32
	Attempts int // attempts with a reward
	Passed   int // of those, rewarded above 0
	Mean     float64
}

// Tasks returns every task with a rewarded attempt, by task index.
func (s *Set) Tasks() []TaskStats {
	by := map[int32]*TaskStats{}
	for i := range s.Outcomes() {
		o := &s.outcomes[i]
		if o.Task < 0 || !o.HasReward() {
			continue
		}
		t := by[o.Task]
		if t == nil {
			t = &TaskStats{Task: o.Task}
			by[o.Task] = t
		}
		t.Attempts++
		t.Mean += o.Reward
		if o.Reward > 0 {
			t.Passed++
		}
	}
	out := make([]TaskStats, 0, len(by))
	for _, t := range by {
		t.Mean /= float64(t.Attempts)
		out = append(out, *t)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Task < out[b].Task })
	return out
}

// Line is the one line a report prints: what was read and what joined.
func (j *Joined) Line() string {
	if j == nil {
		return ""
	}
	kinds := map[Kind]int{}
	files := 0
	for _, f := range j.Set.Files {
		if f.Kind != NotEvidence {
			files++
			kinds[f.Kind] += f.Rows
		}
	}
	var parts []string
	for k := Results; k <= Quality; k++ {
		if n, ok := kinds[k]; ok {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	s := fmt.Sprintf("evidence: %d %s", files, plural(files, "file", "files"))
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	if skipped := len(j.Set.Files) - files; skipped > 0 {
		s += fmt.Sprintf(", %d not Gym evidence", skipped)
	}
	if j.Set.BadTotal > 0 {
		s += fmt.Sprintf(", %d bad %s (first %s)", j.Set.BadTotal, plural(j.Set.BadTotal, "line", "lines"), j.Set.Bad[0])
	}
	s += "; " + j.Coverage.String()
	if n := j.Coverage.Untraced; n > 0 && j.Coverage.Joined() > 0 {
		s += fmt.Sprintf("; %d %s in the files not traced", n, plural(n, "attempt", "attempts"))
	}
	total := 0
	for _, n := range j.Conflicts {
		total += n
	}
	if total > 0 {
		s += fmt.Sprintf("; %d %s", total, plural(total, "contradiction", "contradictions"))
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ContradictionLines renders the contradictions for text reports, a line
// each, at most limit (0: all kept).
func (j *Joined) ContradictionLines(limit int) []string {
	var out []string
	for i, c := range j.Contradictions {
		if limit > 0 && i == limit {
			out = append(out, fmt.Sprintf("… and %d more", len(j.Contradictions)-limit))
			break
		}
		line := fmt.Sprintf("%s: %s", c.Rollout, c.Kind)
		if c.Detail != "" {
			line += " (" + c.Detail + ")"
		}
		out = append(out, line)
	}
	return out
}
