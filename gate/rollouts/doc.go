// Package rollouts finds rollouts by structure. A rollout, in Gym, is the
// agent's POST /run request and everything it causes across processes; by
// default no span names its rollout. A Finder cuts a snapshot's fragments
// into units, classifies each (a rollout's, run-level traffic, or an orphan
// cut off by a broken hop), attributes orphans to the rollout whose CLIENT
// span called them, and returns a Structure: the rollouts every view counts,
// the run-level traffic, the unattributed fragments and the context leaks.
// It also reads the HTTP routes and attribute keys of Gym's spans.
//
// rollouts imports model and gate/groups only: never filter or whatif,
// receiver, tui or the OpenTelemetry SDK.
package rollouts
