package whatif

import (
	"fmt"
	"strconv"
	"strings"
)

// Budget is a ceiling on what a spec may produce: spans or bytes, per
// rollout, per second or per day (the last two at a rollout rate).
type Budget struct {
	Limit float64
	Bytes bool   // the limit counts bytes, else spans
	Per   string // "rollout", "s" or "day"
	text  string
}

// String returns the budget as given.
func (b Budget) String() string { return b.text }

var byteUnits = map[string]float64{
	"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

var budgetPers = map[string]string{
	"rollout": "rollout", "r": "rollout",
	"s": "s", "sec": "s", "second": "s",
	"d": "day", "day": "day",
}

// ParseBudget reads a budget: a number, a unit (spans, or bytes as B, KB,
// MB, GB, TB, KiB, MiB, GiB, TiB), a slash and a period (rollout, s, day),
// e.g. 120spans/rollout, 40KB/rollout, 2000spans/s, 50GB/day.
func ParseBudget(s string) (Budget, error) {
	bad := func(why string) (Budget, error) {
		return Budget{}, fmt.Errorf("budget %q: %s (want e.g. 120spans/rollout, 40KB/rollout, 2000spans/s, 50GB/day)", s, why)
	}
	amount, per, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "/")
	if !ok {
		return bad("no /rollout, /s or /day")
	}
	b := Budget{text: s}
	if b.Per, ok = budgetPers[strings.TrimSpace(per)]; !ok {
		return bad(fmt.Sprintf("unknown period %q", per))
	}
	i := 0
	for i < len(amount) && (amount[i] >= '0' && amount[i] <= '9' || amount[i] == '.' || amount[i] == 'e' && i > 0 && i+1 < len(amount) && amount[i+1] >= '0' && amount[i+1] <= '9') {
		i++
	}
	num, unit := amount[:i], strings.TrimSpace(amount[i:])
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return bad(fmt.Sprintf("%q is not a number >= 0", num))
	}
	switch {
	case unit == "spans" || unit == "span":
		b.Limit = v
	case byteUnits[unit] > 0:
		b.Limit, b.Bytes = v*byteUnits[unit], true
	default:
		return bad(fmt.Sprintf("unknown unit %q (spans or B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", unit))
	}
	return b, nil
}

// BudgetVerdict is a report judged against a budget.
type BudgetVerdict struct {
	Budget Budget
	// Value is what the spec produces, in the budget's unit and period.
	Value float64
	Fits  bool
	// MissesBy is Value - Limit when it does not fit, else 0; Headroom is
	// Limit - Value when it fits, else 0.
	MissesBy, Headroom float64
	// RolloutRate is the rollouts per second used for /s and /day.
	RolloutRate float64
}

// String is the verdict in one sentence, as the CLI and the TUI print it:
// "budget 50spans/rollout: fits, 44.67 spans/rollout (5.33 to spare)" or
// "budget 50spans/rollout: misses by 5.33 spans/rollout (55.33 against
// 50.00)", with the rollout rate for /s and /day budgets.
func (v BudgetVerdict) String() string {
	unit := "spans"
	if v.Budget.Bytes {
		unit = "bytes"
	}
	rate := ""
	if v.Budget.Per != "rollout" {
		rate = fmt.Sprintf(" at %.2f rollouts/s", v.RolloutRate)
	}
	if v.Fits {
		return fmt.Sprintf("budget %s: fits, %.2f %s/%s%s (%.2f to spare)", v.Budget, v.Value, unit, v.Budget.Per, rate, v.Headroom)
	}
	return fmt.Sprintf("budget %s: misses by %.2f %s/%s%s (%.2f against %.2f)", v.Budget, v.MissesBy, unit, v.Budget.Per, rate, v.Value, v.Budget.Limit)
}

// Judge says whether the report's spec fits the budget. rate is rollouts
// per second for /s and /day budgets; 0 takes the capture's own rate
// (rollouts over its wall time). A spec exactly at the limit fits.
func (b Budget) Judge(rep *Report, rate float64) BudgetVerdict {
	v := BudgetVerdict{Budget: b}
	if rate <= 0 && rep.WallSeconds > 0 {
		rate = float64(rep.Input.Rollouts) / rep.WallSeconds
	}
	v.RolloutRate = rate
	perRollout := 0.0
	if rep.Input.Rollouts > 0 {
		perRollout = float64(rep.Result.Spans) / float64(rep.Input.Rollouts)
		if b.Bytes {
			perRollout = float64(rep.Result.Bytes) / float64(rep.Input.Rollouts)
		}
	}
	switch b.Per {
	case "rollout":
		v.Value = perRollout
	case "s":
		v.Value = perRollout * rate
	case "day":
		v.Value = perRollout * rate * 86400
	}
	v.Fits = v.Value <= b.Limit
	if v.Fits {
		v.Headroom = b.Limit - v.Value
	} else {
		v.MissesBy = v.Value - b.Limit
	}
	return v
}
