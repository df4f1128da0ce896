package tui

import (
	"fmt"
	"sort"
	"strings"

	"github.com/nemo-gym/gymtrace/gate"
)

// captureHop is a join break already in the capture, as the join check
// (check --json) reports it: the hop, its reason with the likely fix, how
// many times it broke and how many rollouts it split.
type captureHop struct {
	from, to, reason string
	count, rollouts  int
}

// captureHops lists the check's broken hops in its order, one line per hop,
// with the split rollouts each one appears in.
func captureHops(c *gate.CheckReport) []captureHop {
	if c == nil {
		return nil
	}
	type key struct{ from, to, reason string }
	idx := map[key]int{}
	var out []captureHop
	for _, h := range c.Hops {
		k := key{h.FromService, h.ToService, h.Reason}
		if i, ok := idx[k]; ok {
			out[i].count += h.Count
			continue
		}
		idx[k] = len(out)
		out = append(out, captureHop{from: h.FromService, to: h.ToService, reason: h.Reason, count: h.Count})
	}
	for _, rc := range c.ByRollout {
		if rc.Status != gate.Split {
			continue
		}
		seen := map[int]bool{}
		for _, h := range rc.Hops {
			if i, ok := idx[key{h.FromService, h.ToService, h.Reason}]; ok && !seen[i] {
				seen[i] = true
				out[i].rollouts++
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].count > out[j].count })
	return out
}

// hopText is a hop as one line: caller → callee (span): reason.
func hopText(from, to, span, reason string) string {
	if to == "" {
		to = "(no one)"
	}
	s := shortService(from) + " → " + shortService(to)
	if span != "" {
		s += " (" + span + ")"
	}
	return s + ": " + reason
}

// hopFix is the fix for a break the previewed spec would cause, from its
// reason; "" when the reason already says it.
func hopFix(reason string) string {
	switch {
	case strings.HasPrefix(reason, "http_client and server off"):
		return "keep server and http_client on"
	case strings.HasPrefix(reason, "http_client off"):
		return "keep http_client on"
	case strings.HasPrefix(reason, "server off"):
		return "keep server on"
	}
	return ""
}

// breakLine is a previewed break as one line with its fix and counts.
func breakLine(side string, b breakSum) string {
	text := glyphSplit + " " + side + ": " + hopText(b.from, b.to, b.span, b.reason)
	if fix := hopFix(b.reason); fix != "" {
		text += "; fix: " + fix
	}
	return text + " · " + countNoun(b.rollouts, "rollout") + ", " + countNoun(b.spans, "span")
}

// captureLine is a capture's break as one line with its counts.
func captureLine(h captureHop) string {
	return fmt.Sprintf("%s in capture: %s · %s, ×%d", glyphSplit, hopText(h.from, h.to, "", h.reason),
		countNoun(h.rollouts, "rollout"), h.count)
}

// splitIn returns the rollouts split in the capture itself (the check's
// verdict), which no spec can join again.
func splitIn(c *gate.CheckReport) map[string]bool {
	if c == nil || c.Split == 0 {
		return nil
	}
	out := make(map[string]bool, c.Split)
	for id, rc := range c.ByRollout {
		if rc.Status == gate.Split {
			out[id] = true
		}
	}
	return out
}

// shortReason keeps a check reason's finding and its likely fix, the
// parenthesised end, dropping the explanation between: "CLIENT span has no
// SERVER child (server off in nemo-gym/policy_model?)".
func shortReason(reason string) string {
	head, _, ok := strings.Cut(reason, ": ")
	if !ok {
		return reason
	}
	if i := strings.LastIndex(reason, " ("); i >= 0 && strings.HasSuffix(reason, ")") {
		return head + reason[i:]
	}
	return head
}
