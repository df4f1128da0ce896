// Package tui is gymtrace's terminal interface: a Bubble Tea program that
// shows live or loaded rollouts as trace waterfalls, the span groups of the
// current and a previewed span_groups spec side by side, and whether
// cross-process joining survives the previewed spec.
//
// tui reads immutable model.Snapshots and gate results; it never mutates the
// store and renders gate's typed results (rollouts, causes, verdicts)
// rather than re-deriving them. It may import model, the gate packages and
// the charm libraries; it must not import receiver or gymsim.
//
// The root Model (model.go) keeps its state in parts, each with one owner:
// feed, the data shown (written by setSnapshot and setAnalysis in
// analysis.go); jobs, the commands in flight, one at a time per
// whatif.Engine because an engine is not safe for concurrent use; views,
// the panels; interaction, the user's focus, marks and status line; screen,
// the geometry, written by layout (layout.go). View only joins renders the
// panels cached in Update.
//
// Every panel keeps the panel contract (panel.go): its slot on screen, its
// size, its keys while focused, its view and its own key help; data reaches
// it through refresh with the shared env, or through the root's setters
// when an analysis lands. A panel that computes off the UI goroutine also
// keeps the optional steps: request, asked after every change for the
// command its state needs, and update, offered every message the root
// does not route itself, whatever the focus. The root's one dispatch loop
// goes through Model.panels, so a new panel is a new file and one entry in
// that list. A
// panel drawn over another (span detail, statistics, cost and worth) is an
// overlay: its opener key opens it over its slot from anywhere and closes
// it again, esc closes it, and the footer and help follow whichever panel
// is in front. The lists (rollouts, waterfall, span groups, the cohort's
// rows) move with one listCursor (cursor.go); the other overlays scroll a
// pager. An overlay that wants the height (the cohort, the rollout
// compare) has it while focused: the panels beside it keep their titles.
//
// Without colour (NO_COLOR) every state is still on screen: glyphs carry
// errors, splits and marks, and each process's bars have a fill of their
// own. Screens are tested at 80×24, 120×40 and 200×50 against goldens
// (internal/golden, refreshed with go test -update and read in review) and
// in tmux with the real binary.
package tui
