package tui

import (
	"fmt"
	"strings"

	"github.com/nemo-gym/gymtrace/gate/whatif"
)

// captureHops lists the capture's own broken hops as the join check
// (check --json) reports them: one line per hop (caller, callee, span,
// reason), in its order, with its spans and the rollouts it was found in.
func captureHops(c *whatif.CheckReport) []breakSum {
	var out []breakSum
	for _, b := range c.HopSummary() {
		out = append(out, newBreakSum(b))
	}
	return out
}

// hopText is a hop as one line: caller → callee (span): reason.
func hopText(from, to, span, reason string) string {
	return hopName(from, to, span) + ": " + reason
}

// hopName is a hop as a phrase: caller → callee (span).
func hopName(from, to, span string) string {
	return whatif.HopName(whatif.BreakSum{FromService: from, ToService: to, SpanName: span}, "→", shortService)
}

// breakLine is a previewed break as one line with its fix and counts.
func breakLine(side string, b breakSum) string {
	text := glyphSplit + " " + side + ": " + hopText(b.from, b.to, b.span, b.reason)
	if fix := b.cause.Fix(); fix != "" {
		text += "; fix: " + fix
	}
	return text + " · " + countNoun(b.rollouts, "rollout") + ", " + countNoun(b.spans, "span")
}

// captureLine is a capture's break as one line with its counts, its
// reason shortened when whole it would take more than two lines of width.
// A context leak is no join break: it is said as a leak, without ✗.
func captureLine(h breakSum, width int) string {
	what := glyphSplit + " in capture"
	if h.cause.Leak() {
		what = "context leak in capture"
	}
	line := func(reason string) string {
		return fmt.Sprintf("%s: %s · %s, ×%d", what, hopText(h.from, h.to, h.span, reason),
			countNoun(h.rollouts, "rollout"), h.spans)
	}
	return fitReason(line, h.reason, h.short, width)
}

// splitHops separates a capture's broken hops from its context leaks.
func splitHops(hs []breakSum) (breaks, leaks []breakSum) {
	for _, h := range hs {
		if h.cause.Leak() {
			leaks = append(leaks, h)
		} else {
			breaks = append(breaks, h)
		}
	}
	return breaks, leaks
}

// fitReason is line(reason) when it wraps into at most two lines of width,
// else line of the reason's finding and likely fixes: a list of hops stays
// a list, each still saying what broke and what to turn on.
func fitReason(line func(reason string) string, reason, short string, width int) string {
	if full := line(reason); width <= 0 || len(wrap(full, width)) <= 2 {
		return full
	}
	return line(trimGym(short))
}

// splitIn returns the rollouts split in the capture itself (the check's
// verdict), which no spec can join again.
func splitIn(c *whatif.CheckReport) map[string]bool {
	if c == nil || c.Split == 0 {
		return nil
	}
	out := make(map[string]bool, c.Split)
	for id, rc := range c.ByRollout {
		if rc.Status == whatif.Split {
			out[id] = true
		}
	}
	return out
}

// trimGym drops Gym's service prefix inside a cause's short words.
func trimGym(s string) string { return strings.ReplaceAll(s, "nemo-gym/", "") }
