// Package filter is the filter language of the rollout list, the trace view
// and the CLI's --filter: terms over rollouts and spans (ids, services, span
// names, kinds, status, durations, attributes), parsed once and matched
// against snapshots.
//
// filter imports model and gate/rollouts (span display names) only: never
// whatif, receiver, tui or the OpenTelemetry SDK.
package filter
