package advise

import (
	"testing"

	"github.com/nemo-gym/gymtrace/gate/whatif"
)

func mustBudget(tb testing.TB, s string) whatif.Budget {
	tb.Helper()
	b, err := whatif.ParseBudget(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
