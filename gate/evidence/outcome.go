package evidence

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// State is how an attempt ended, as Gym's files tell.
type State uint8

// States, from least to most said: a later file never lowers one.
const (
	Unknown    State = iota // only a verdict or a capture names it
	Dispatched              // in the materialized inputs, no result and no failure: killed, if the run is over
	Failed                  // a row of <stem>_failures.jsonl
	Succeeded               // a row of <stem>.jsonl
)

// String names the state as --json spells it.
func (s State) String() string {
	switch s {
	case Dispatched:
		return "dispatched"
	case Failed:
		return "failed"
	case Succeeded:
		return "succeeded"
	}
	return "unknown"
}

// Verdict is Gym's health-check verdict of a rollout.
type Verdict uint8

// Verdicts; NoVerdict when no rollout_verdicts.jsonl row names the rollout.
const (
	NoVerdict Verdict = iota
	Healthy
	Unhealthy
	Unobserved
)

// String names the verdict as Gym spells it ("" for none).
func (v Verdict) String() string {
	switch v {
	case Healthy:
		return "healthy"
	case Unhealthy:
		return "unhealthy"
	case Unobserved:
		return "unobserved"
	}
	return ""
}

func parseVerdict(s string) (Verdict, bool) {
	switch s {
	case "healthy":
		return Healthy, true
	case "unhealthy":
		return Unhealthy, true
	case "unobserved":
		return Unobserved, true
	}
	return NoVerdict, false
}

// Outcome is what Gym's files say of one rollout attempt. Unknown numbers
// are -1 (NaN for floats): Gym leaves a field out when it does not know it,
// and unknown is not zero. An Outcome is about 130 bytes; a Set holds one
// per attempt named in any file.
type Outcome struct {
	// ID is the attempt's rollout id as spans carry it: _ng_rollout_id,
	// else "task-rollout", with "-a{n}" after the first attempt.
	ID string
	// Failure is the failure class (_ng_failure_class) of a failed attempt;
	// Finding the first health finding's check, when unhealthy.
	Failure, Finding string
	Reward           float64 // NaN when no result row says one
	LatencyMS        float64 // ng_perf.total_latency_ms, NaN when unknown
	Task, Index      int32   // _ng_task_index, _ng_rollout_index (-1 unknown)
	InTokens         int32   // prompt tokens (ng_perf, else response.usage)
	OutTokens        int32   // completion tokens
	Line             int32   // the result (or failure) row's line in File
	Turns, Tools     int16   // ng_perf.num_turns, num_tool_calls
	Calls            int16   // model calls a capture records
	CallErrors       int16   // of those, answered with a status of 400 or more
	Findings         int16   // health findings
	Attempt          int16
	State            State
	Verdict          Verdict
	// calls says where Calls came from: the row's ng_model_call_capture
	// is the whole of them, a capture file's records add up.
	calls callSource
	File  int16 // the row's file, an index in Set.Files
}

func newOutcome(id string) Outcome {
	nan := math.NaN()
	return Outcome{ID: id, Reward: nan, LatencyMS: nan, Task: -1, Index: -1, Turns: -1, Tools: -1,
		InTokens: -1, OutTokens: -1, Calls: -1, File: -1}
}

// count16 reads a count of turns or calls; -1 (unknown) for anything but
// one, saturated past int16.
func count16(v []byte) int16 {
	n := count32(v)
	if n < 0 {
		return -1
	}
	return int16(min(n, math.MaxInt16))
}

// HasReward reports whether a result row gave the attempt a reward.
func (o *Outcome) HasReward() bool { return !math.IsNaN(o.Reward) }

// TaskKey names the task the attempt is of: its _ng_task_index, else "".
func (o *Outcome) TaskKey() string {
	if o.Task < 0 {
		return ""
	}
	return strconv.Itoa(int(o.Task))
}

// rolloutID is Gym's rollout id of a row: _ng_rollout_id when set, else
// "{task}-{rollout}" and "-a{n}" for attempts after the first ("" when the
// row names neither).
func rolloutID(explicit string, task, index int32, attempt int16) string {
	if explicit != "" {
		return NormalizeID(explicit)
	}
	if task < 0 || index < 0 {
		return ""
	}
	id := strconv.Itoa(int(task)) + "-" + strconv.Itoa(int(index))
	if attempt > 0 {
		id += "-a" + strconv.Itoa(int(attempt))
	}
	return id
}

// NormalizeID reads the alias "task:rollout" (gym eval profile's) as Gym's
// "task-rollout"; any other id is kept as it is.
func NormalizeID(id string) string {
	i := strings.IndexByte(id, ':')
	if i <= 0 || i == len(id)-1 || strings.IndexByte(id[i+1:], ':') >= 0 {
		return id
	}
	if !digits(id[:i]) {
		return id
	}
	rest := id[i+1:]
	num := rest
	if j := strings.Index(rest, "-a"); j > 0 {
		num = rest[:j]
		if !digits(rest[j+2:]) {
			return id
		}
	}
	if !digits(num) {
		return id
	}
	return id[:i] + "-" + rest
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// RewardText renders a reward as the TUI and text reports show it.
func (o *Outcome) RewardText() string {
	if !o.HasReward() {
		return ""
	}
	return strconv.FormatFloat(o.Reward, 'g', 4, 64)
}

// Summary is one line about the attempt: state, reward, failure, verdict.
func (o *Outcome) Summary() string {
	var b strings.Builder
	b.WriteString(o.State.String())
	if o.HasReward() {
		fmt.Fprintf(&b, " reward=%s", o.RewardText())
	}
	if o.Failure != "" {
		fmt.Fprintf(&b, " failure=%s", o.Failure)
	}
	if o.Verdict != NoVerdict {
		fmt.Fprintf(&b, " verdict=%s", o.Verdict)
		if o.Finding != "" {
			fmt.Fprintf(&b, " (%s)", o.Finding)
		}
	}
	return b.String()
}
