// Package whatif is the what-if engine: the preview of a span_groups spec
// over a capture (what would be kept, how traces would join or split, bytes
// and rates), with its typed verdicts, the join check of real data, diff of
// two rollouts, export of a capture as a spec would have cut it, the worth
// and cost of each group, byte budgets and latency profiles. An Engine
// caches per fragment version and per rollout, so a toggle or a new
// snapshot only redoes what changed.
//
// whatif imports model, gate/groups, gate/rollouts and gate/filter only:
// never receiver, tui or the OpenTelemetry SDK.
package whatif
