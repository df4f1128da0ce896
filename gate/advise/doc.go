// Package advise searches a Gym variant's span_groups spec space for the
// specs that fit a budget, over a captured snapshot, and ranks them by what
// they keep.
//
// It builds on the what-if engine (every candidate is judged by the same
// Preview and Budget.Judge that `preview --budget` prints) and imports
// model, gate/groups and gate/whatif only; never receiver, tui or the
// OpenTelemetry SDK.
package advise
