// Package tui is gymtrace's terminal interface: a Bubble Tea program that
// shows live or loaded rollouts as trace waterfalls, the span groups of the
// current and a previewed span_groups spec side by side, and whether
// cross-process joining survives the previewed spec.
//
// tui reads immutable model.Snapshots and gate results; it never mutates the
// store. It may import model, gate and the charm libraries; it must not import
// receiver or gymsim. Heavy work (previews, join checks, per-rollout
// simulations) runs in commands, one at a time per gate.Engine, because an
// Engine is not safe for concurrent use.
package tui
