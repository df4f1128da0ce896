// Package gate knows NeMo Gym's span groups: the registry of groups and
// presets, the span_groups spec parser, the classifier (span → group), the
// what-if simulation of a spec over a captured snapshot and the join check.
//
// gate imports model, and a YAML parser for groups files and Gym configs;
// never receiver, tui or the OpenTelemetry SDK (gymsim gates its spans with
// gate, so gate must stay light). Its results are pure functions of a
// snapshot, cheap enough to recompute on every keypress.
package gate
