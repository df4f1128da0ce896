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
	// scale is the bytes of the unit the limit was written in (1e9 for
	// GB); 0 reads as 1.
	scale float64
}

// String returns the budget as given, a space between its number and its
// unit: "50 spans/rollout", "40 KB/rollout".
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
	// The text keeps the user's spelling of the unit (KB, not kb); a
	// valid budget is ASCII, so the lower-cased cut holds for it too.
	if given, givenPer, _ := strings.Cut(strings.TrimSpace(s), "/"); len(given) == len(amount) {
		b.text = given[:i] + " " + strings.TrimSpace(given[i:]) + "/" + strings.TrimSpace(givenPer)
	}
	switch {
	case unit == "spans" || unit == "span":
		b.Limit = v
	case byteUnits[unit] > 0:
		b.Limit, b.Bytes, b.scale = v*byteUnits[unit], true, byteUnits[unit]
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
// "budget 50 spans/rollout: fits, 44.67 spans/rollout (5.33 to spare)" or
// "budget 50 spans/rollout: misses by 5.33 spans/rollout (55.33 against
// 50.00)", with the rollout rate for /s and /day budgets. Figures have two
// decimals, or as many more as it takes for the value shown to compare
// with the limit shown as the verdict says.
func (v BudgetVerdict) String() string {
	unit := "spans"
	if v.Budget.Bytes {
		unit = "bytes"
	}
	rate := ""
	if v.Budget.Per != "rollout" {
		rate = fmt.Sprintf(" at %.2f rollouts/s", v.RolloutRate)
	}
	d := v.decimals(2)
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', d, 64) }
	if v.Fits {
		return fmt.Sprintf("budget %s: fits, %s %s/%s%s (%s to spare)", v.Budget, f(v.Value), unit, v.Budget.Per, rate, f(v.Headroom))
	}
	return fmt.Sprintf("budget %s: misses by %s %s/%s%s (%s against %s)", v.Budget, f(v.MissesBy), unit, v.Budget.Per, rate, f(v.Value), f(v.Budget.Limit))
}

// Short is the verdict in a few words, for a table cell: "fits (49.85 of
// 50 spans/rollout)", "misses by 0.2 (50.2 of 50 spans/rollout)". Figures
// are as short as they can be while the value shown compares with the
// limit as the verdict says.
func (v BudgetVerdict) Short() string {
	d := v.decimals(0)
	if v.Value < 10 && d < 1 {
		d = 1
	}
	f := func(x float64) string { return trimZeros(strconv.FormatFloat(x, 'f', d, 64)) }
	if v.Fits {
		return fmt.Sprintf("fits (%s of %s)", f(v.Value), v.Budget)
	}
	return fmt.Sprintf("misses by %s (%s of %s)", f(v.MissesBy), f(v.Value), v.Budget)
}

// Brief is the verdict without the budget, in the budget's own unit (GB
// for a GB budget), for a cell beside a line that names the budget: "fits
// (49.9)", "misses by 0.2 (50.2)". Figures are as Short's.
func (v BudgetVerdict) Brief() string {
	if s := v.Budget.scale; s > 0 {
		v.Value, v.MissesBy, v.Headroom, v.Budget.Limit = v.Value/s, v.MissesBy/s, v.Headroom/s, v.Budget.Limit/s
	}
	d := v.decimals(0)
	if v.Value < 10 && d < 1 {
		d = 1
	}
	f := func(x float64) string { return trimZeros(strconv.FormatFloat(x, 'f', d, 64)) }
	if v.Fits {
		return fmt.Sprintf("fits (%s)", f(v.Value))
	}
	return fmt.Sprintf("misses by %s (%s)", f(v.MissesBy), f(v.Value))
}

// Against is the budget a verdict is judged against, with the rollout
// rate for /s and /day budgets: "50 spans/rollout", "2 GB/day at 0.23
// rollouts/s".
func (v BudgetVerdict) Against() string {
	if v.Budget.Per == "rollout" {
		return v.Budget.String()
	}
	return fmt.Sprintf("%s at %.2f rollouts/s", v.Budget, v.RolloutRate)
}

// ValueText is the verdict's value with as many decimals as String gives
// it, for lists that show the value beside the budget.
func (v BudgetVerdict) ValueText() string {
	return strconv.FormatFloat(v.Value, 'f', v.decimals(2), 64)
}

// decimals is the fewest decimals, at least min, at which the value and
// the limit, rounded, compare as the verdict says (a value under the limit
// does not read as the limit), and a miss or headroom is not shown as 0.
func (v BudgetVerdict) decimals(min int) int {
	for d := min; d < 9; d++ {
		val := round(v.Value, d)
		lim := round(v.Budget.Limit, d)
		gap := round(v.MissesBy+v.Headroom, d)
		switch {
		case v.Value == v.Budget.Limit:
			return d
		case v.Fits && val < lim && gap > 0, !v.Fits && val > lim && gap > 0:
			return d
		}
	}
	return 9
}

// round is x rounded to d decimals, as FormatFloat 'f' rounds it.
func round(x float64, d int) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', d, 64), 64)
	return r
}

// trimZeros drops a decimal number's trailing zeros, and its point when
// nothing is left after it.
func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
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
