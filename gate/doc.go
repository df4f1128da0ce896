// Package gate holds, one package per stage, what gymtrace knows about NeMo
// Gym's span groups and rollouts. It has no code of its own:
//
//   - gate/groups: the registry of groups and presets per Gym variant, the
//     span_groups spec parser, the classifier (span → group), variant
//     detection, groups files and config snippets.
//   - gate/rollouts: rollouts found by structure (a rollout is the agent's
//     POST /run and everything it causes), run-level traffic, context leaks,
//     and the HTTP routes and attribute keys of Gym's spans.
//   - gate/filter: the filter language of the rollout list and the CLI.
//   - gate/whatif: the what-if engine: the preview of a spec over a capture,
//     the join check, diff, export, worth, budget and latency.
//   - gate/advise: the spec that fits a budget and keeps most, searched
//     over a variant's spec space with the what-if engine.
//   - gate/contract: a capture held to a golden capture's telemetry.
//   - gate/cohort: what sets a cohort of rollouts apart from a baseline.
//   - gate/critpath: a rollout's critical path and who holds it.
//
// Imports point one way, groups ← rollouts ← filter ← whatif, and advise,
// contract and cohort build on whatif (critpath on rollouts); every gate
// package imports model (and groups a YAML parser), never receiver, tui or
// the OpenTelemetry SDK: gate must stay light. Results are pure functions of
// a snapshot, cheap enough to recompute on every keypress.
package gate
