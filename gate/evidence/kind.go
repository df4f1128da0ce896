package evidence

// Kind is which of Gym's files a file is, told by its content.
type Kind uint8

// Kinds of evidence files.
const (
	NotEvidence Kind = iota
	Results          // <stem>.jsonl: successful rollouts
	Failures         // <stem>_failures.jsonl: one row per failed attempt
	Inputs           // <stem>_materialized_inputs.jsonl: every dispatched row
	Verdicts         // rollout_verdicts.jsonl: health-check verdicts
	Captures         // <rollout_id>.capture.jsonl: model-call records
	RLTrain          // NeMo-RL's train_data_step{N}.jsonl
	Aggregate        // <stem>_aggregate_metrics.json
	Quality          // quality_summary.json
)

var kindNames = [...]string{"not evidence", "results", "failures", "materialized inputs", "health verdicts",
	"model-call captures", "NeMo-RL train data", "aggregate metrics", "quality summary"}

// String names the kind in reports.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Code names the kind as --json spells it.
func (k Kind) Code() string {
	return [...]string{"none", "results", "failures", "materialized_inputs", "verdicts", "captures",
		"rl_train_data", "aggregate_metrics", "quality_summary"}[k]
}

// lineKind tells a JSON-lines row's file kind by the keys it has.
func lineKind(keys map[string]bool) Kind {
	switch {
	case keys["verdict"] && (keys["rollout_id"] || keys["_ng_task_index"] || keys["findings"]):
		return Verdicts
	case keys["_ng_failure_class"]:
		return Failures
	case keys["rewards"] && keys["idx"]:
		return RLTrain
	case keys["model_call_id"] || keys["started_at"] && keys["completed_at"]:
		return Captures
	case keys["reward"] || keys["response"] && keys["_ng_task_index"]:
		return Results
	case keys["_ng_task_index"] || keys["_ng_rollout_id"]:
		return Inputs
	}
	return NotEvidence
}
