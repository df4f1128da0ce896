// Package tui is gymtrace's terminal interface: a Bubble Tea program that
// shows live or loaded rollouts as trace waterfalls, the span groups of the
// current and a previewed span_groups spec side by side, and whether
// cross-process joining survives the previewed spec.
//
// tui reads immutable model.Snapshots and gate results; it never mutates the
// store. It may import model, the gate packages (gate/groups, gate/rollouts,
// gate/filter, gate/whatif) and the charm libraries; it must not import
// receiver or gymsim. Heavy work (previews, join checks, per-rollout
// simulations) runs in commands, one at a time per whatif.Engine, because an
// Engine is not safe for concurrent use.
//
// Every panel keeps the panel contract (panel.go): its slot on screen, its
// size, its keys while focused, its view and its own key help; data reaches
// it through refresh with the shared env. The root model's one dispatch loop
// goes through Model.panels, so a new panel is a new file and one entry in
// that list. A panel drawn over another (span detail, statistics) is an
// overlay: its opener key opens it over its slot from anywhere and closes it
// again, esc closes it, and the footer and help follow whichever panel is in
// front.
package tui
