// Package evidence reads the outcomes NeMo Gym keeps in its own files —
// rewards, failure classes, health verdicts, per-rollout perf and model-call
// captures, which by design never ride on spans — and joins them to the
// rollouts gate/rollouts finds by structure.
//
// A join is exact by rollout id (nemo.gym.rollout.id or the /ng-rollout/{id}/
// route on spans; Gym's _ng_rollout_id, else "task-rollout" with "-a{n}" for
// later attempts, in the files), inferred from model-call time windows
// against the model server's spans where the spans carry no id, or not made,
// with the reason said. It is never made by line order: Gym writes results
// in completion order.
//
// evidence imports model and gate/rollouts only: never filter, whatif,
// receiver, tui or the OpenTelemetry SDK.
package evidence
