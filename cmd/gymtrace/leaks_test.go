package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/whatif"
)

// TestContextLeaksOneFigure: on every leak capture, check's text and JSON
// give one figure for the context leaks: the leak rows add up to it in
// both, the text's summary line says it with the rollouts, and each detail
// carries the cause's code and the rows' sentence.
func TestContextLeaksOneFigure(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(realGym, "*leak*", "*"))
	if len(dirs) == 0 {
		t.Fatal("no leak capture under " + realGym)
	}
	row := regexp.MustCompile(` x(\d+)(?: in \d+ rollouts?)?: ` + regexp.QuoteMeta(whatif.CauseLeak.Sentence()) + `$`)
	for _, dir := range dirs {
		name, _ := filepath.Rel(realGym, dir)
		files := realGymCase(t, name)
		_, js, _ := runGateCmd(t, checkCmd, append([]string{"--json"}, files...)...)
		var out checkJSON
		if err := json.Unmarshal([]byte(js), &out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if out.ContextLeaks == 0 || out.ContextLeakRollouts == 0 || out.ContextLeakRollouts > out.Rollouts {
			t.Fatalf("%s: %d context leaks in %d rollouts of %d: want some, in at most every rollout", name, out.ContextLeaks, out.ContextLeakRollouts, out.Rollouts)
		}
		hops, details := 0, 0
		for _, h := range out.BrokenHops {
			if h.Cause == whatif.CauseLeak.Code() {
				hops += h.Count
			}
		}
		for _, d := range out.ContextLeakDetails {
			details += d.Count
			if d.Cause != whatif.CauseLeak.Code() || d.Reason != whatif.CauseLeak.Sentence() {
				t.Errorf("%s: detail %+v: want cause %q and the leak rows' reason", name, d, whatif.CauseLeak.Code())
			}
		}
		_, text, _ := runGateCmd(t, checkCmd, files...)
		rows := 0
		for _, l := range strings.Split(text, "\n") {
			if m := row.FindStringSubmatch(l); m != nil {
				n, _ := strconv.Atoi(m[1])
				rows += n
			}
		}
		line := fmt.Sprintf("context leaks: %d spans in %d rollouts, not join breaks\n", out.ContextLeaks, out.ContextLeakRollouts)
		if hops != out.ContextLeaks || details != out.ContextLeaks || rows != out.ContextLeaks || !strings.Contains(text, line) {
			t.Errorf("%s: context_leaks %d; JSON rows add up to %d, details to %d, text rows to %d; text has %q: %v\n%s",
				name, out.ContextLeaks, hops, details, rows, line, strings.Contains(text, line), text)
		}
	}
}
