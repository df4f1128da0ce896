package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/gate/rollouts"
)

// tokensJSON is a rollout's token usage in `check --json` and
// `preview --json`, present only where spans report any.
type tokensJSON = report.Tokens

// tokenTotalJSON is the capture's.
type tokenTotalJSON = report.TokenTotal

func tokensOut(t rollouts.Tokens) *tokensJSON { return report.TokensOf(t) }

func tokenTotal(rep rollouts.TokenReport) *tokenTotalJSON { return report.TokenTotalOf(rep) }

func tokenReport(st *rollouts.Structure) rollouts.TokenReport { return report.TokenReport(st) }

// writeTokensText is the text reports' line about token usage; nothing
// when no span reports any.
func writeTokensText(w io.Writer, rep rollouts.TokenReport) {
	if t := rep.Total; t.Present() {
		fmt.Fprintf(w, "tokens: %d in, %d out over %d model %s in %d %s%s\n", t.Input, t.Output, t.Calls,
			plural(t.Calls, "call", "calls"), len(rep.PerRollout), plural(len(rep.PerRollout), "rollout", "rollouts"), modelsText(t.Models))
	}
	if t := rep.Outside; t.Present() {
		fmt.Fprintf(w, "tokens outside rollouts: %d in, %d out over %d model %s%s\n", t.Input, t.Output, t.Calls,
			plural(t.Calls, "call", "calls"), modelsText(t.Models))
	}
}

func modelsText(models []string) string {
	if len(models) == 0 {
		return ""
	}
	return " (" + strings.Join(models, ", ") + ")"
}
