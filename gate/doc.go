// Package gate knows NeMo Gym's span groups: the registry of groups and
// presets, the span_groups spec parser, the classifier (span → group), the
// what-if simulation of a spec over a captured snapshot and the join check.
//
// gate imports model only. Its results are pure functions of a snapshot, cheap
// enough to recompute on every keypress.
package gate
