package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/nemo-gym/gymtrace/gate/rollouts"
)

// tokensJSON is a rollout's token usage in `check --json` and
// `preview --json`, present only where spans report any.
type tokensJSON struct {
	Input  int64    `json:"input"`
	Output int64    `json:"output"`
	Calls  int      `json:"calls"`
	Models []string `json:"models"`
}

// tokenTotalJSON is the capture's: the rollouts' total, and what spans
// outside every rollout report, when any do.
type tokenTotalJSON struct {
	tokensJSON
	Rollouts        int         `json:"rollouts"`
	OutsideRollouts *tokensJSON `json:"outside_rollouts,omitempty"`
}

func tokensOut(t rollouts.Tokens) *tokensJSON {
	if !t.Present() {
		return nil
	}
	models := t.Models
	if models == nil {
		models = []string{}
	}
	return &tokensJSON{Input: t.Input, Output: t.Output, Calls: t.Calls, Models: models}
}

// tokenTotal is nil when no span of the capture reports usage, so the key
// is absent.
func tokenTotal(rep rollouts.TokenReport) *tokenTotalJSON {
	if !rep.Total.Present() && !rep.Outside.Present() {
		return nil
	}
	out := &tokenTotalJSON{Rollouts: len(rep.PerRollout), OutsideRollouts: tokensOut(rep.Outside)}
	if t := tokensOut(rep.Total); t != nil {
		out.tokensJSON = *t
	} else {
		out.Models = []string{}
	}
	return out
}

func tokenReport(st *rollouts.Structure) rollouts.TokenReport {
	if st == nil {
		return rollouts.TokenReport{}
	}
	return st.Tokens()
}

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
