package whatif

import (
	"github.com/nemo-gym/gymtrace/gate/groups"
	"math"
	"strings"
	"testing"
	"time"
)

// Cost and worth of each group over threeRollouts (filter_test.go),
// recomputed by hand. Span i starts i ms after the first; each span's
// encoded size is 100 bytes; the capture runs from 0 to 3003 ms.
// Rollouts: a 0..900 ms, b 3..3003, c 7..507.
func TestWorth(t *testing.T) {
	snap := filterCapture(t, threeRollouts)
	reg := groups.Default()
	eng := NewEngine(reg)
	const cost = 0.073 // ms per span, DefaultSpanCost
	ms := int64(time.Millisecond)
	wall := 3.003
	type want struct {
		spans                 int
		wallShare             float64
		p50, p99              int64
		errSpans, errRollouts int
		keepsJoins            bool
		joinedWith, without   int
	}
	tests := []struct {
		group groups.Group
		want  want
	}{
		// The three POST /run cover their rollouts whole; get_weather (30 ms,
		// ERROR) is b's only error. Without server nothing extracts
		// traceparent: every cross-process link breaks.
		{groups.Server, want{4, 1, 500 * ms, 3000 * ms, 1, 1, true, 3, 0}},
		// No span captured, but without it no traceparent is sent.
		{groups.HTTPClient, want{0, 0, 0, 0, 0, 0, true, 3, 0}},
		// gym.rollout: a 850/900, b 2900/3000, c none.
		{groups.Rollout, want{2, (850.0/900 + 2900.0/3000 + 0) / 3, 850 * ms, 2900 * ms, 0, 0, false, 3, 3}},
		// gym.model.responses: 40/900, 2000/3000, 60/500.
		{groups.ModelCall, want{3, (40.0/900 + 2000.0/3000 + 60.0/500) / 3, 60 * ms, 2000 * ms, 0, 0, false, 3, 3}},
		// gym.verify fails in c, c's only error: 20/500 of c.
		{groups.Verify, want{1, (20.0 / 500) / 3, 20 * ms, 20 * ms, 1, 1, false, 3, 3}},
		{groups.Sandbox, want{0, 0, 0, 0, 0, 0, false, 3, 3}},
	}
	ws := eng.Worth(snap, reg.All(), 0)
	// Rows are indexed by Group: one per bit, placeholders of groups the
	// variant lacks included.
	if len(ws) != len(reg.Table()) {
		t.Fatalf("%d rows, want one per group (no unclassified span)", len(ws))
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for _, tt := range tests {
		t.Run(reg.Name(tt.group), func(t *testing.T) {
			w := ws[tt.group]
			x := tt.want
			n := float64(x.spans)
			if w.Spans != x.spans || w.Bytes != int64(100*x.spans) {
				t.Errorf("spans %d bytes %d, want %d and %d", w.Spans, w.Bytes, x.spans, 100*x.spans)
			}
			if !near(w.SpansPerRollout, n/3) || !near(w.BytesPerRollout, 100*n/3) || !near(w.CPUMSPerRollout, n/3*cost) {
				t.Errorf("per rollout %v spans %v bytes %v cpu ms, want %v %v %v", w.SpansPerRollout, w.BytesPerRollout, w.CPUMSPerRollout, n/3, 100*n/3, n/3*cost)
			}
			if !near(w.SpansPerSecond, n/wall) || !near(w.BytesPerSecond, 100*n/wall) || !near(w.CPUMSPerSecond, n/wall*cost) {
				t.Errorf("per second %v spans %v bytes %v cpu ms", w.SpansPerSecond, w.BytesPerSecond, w.CPUMSPerSecond)
			}
			if !near(w.WallShare, x.wallShare) {
				t.Errorf("wall share %v, want %v", w.WallShare, x.wallShare)
			}
			if w.P50 != x.p50 || w.P99 != x.p99 {
				t.Errorf("p50 %v p99 %v, want %v %v", time.Duration(w.P50), time.Duration(w.P99), time.Duration(x.p50), time.Duration(x.p99))
			}
			if w.ErrorSpans != x.errSpans || w.ErrorRollouts != x.errRollouts {
				t.Errorf("error spans %d, rollouts only it shows failing %d; want %d, %d", w.ErrorSpans, w.ErrorRollouts, x.errSpans, x.errRollouts)
			}
			if w.KeepsJoins != x.keepsJoins || w.JoinedWith != x.joinedWith || w.JoinedWithout != x.without {
				t.Errorf("keeps joins %v (%d with, %d without), want %v (%d, %d)", w.KeepsJoins, w.JoinedWith, w.JoinedWithout, x.keepsJoins, x.joinedWith, x.without)
			}
		})
	}
	// A per-span cost given scales the CPU columns only.
	w2 := eng.Worth(snap, reg.All(), 1*time.Millisecond)[groups.Server]
	if !near(w2.CPUMSPerRollout, 4.0/3) || w2.Spans != 4 {
		t.Errorf("--span-cost 1ms: %v cpu ms per rollout, want 4/3", w2.CPUMSPerRollout)
	}
}

func TestBudget(t *testing.T) {
	// 4 rollouts over 2 s: 100 spans and 10000 bytes per rollout, 2 rollouts/s.
	rep := &Report{Input: InputSummary{Rollouts: 4}, Result: Result{Spans: 400, Bytes: 40000}, WallSeconds: 2}
	tests := []struct {
		budget           string
		rate             float64
		value            float64
		fits             bool
		missBy, headroom float64
	}{
		{"100spans/rollout", 0, 100, true, 0, 0}, // exactly at the limit fits
		{"99spans/rollout", 0, 100, false, 1, 0},
		{"101 spans/rollout", 0, 100, true, 0, 1},
		{"200spans/s", 0, 200, true, 0, 0}, // at the capture's own rate
		{"199spans/s", 0, 200, false, 1, 0},
		{"150spans/s", 1, 100, true, 0, 50}, // at a rate given
		{"10kB/rollout", 0, 10000, true, 0, 0},
		{"9.99KB/rollout", 0, 10000, false, 10, 0},
		{"1GB/day", 1, 864e6, true, 0, 136e6},
		{"1GB/day", 0, 1728e6, false, 728e6, 0},
		{"0spans/rollout", 0, 100, false, 100, 0},
	}
	for _, tt := range tests {
		b, err := ParseBudget(tt.budget)
		if err != nil {
			t.Fatalf("ParseBudget(%q): %v", tt.budget, err)
		}
		v := b.Judge(rep, tt.rate)
		if math.Abs(v.Value-tt.value) > 1e-6 || v.Fits != tt.fits || math.Abs(v.MissesBy-tt.missBy) > 1e-6 || math.Abs(v.Headroom-tt.headroom) > 1e-6 {
			t.Errorf("%s at rate %v: value %v fits %v misses by %v headroom %v; want %v %v %v %v",
				tt.budget, tt.rate, v.Value, v.Fits, v.MissesBy, v.Headroom, tt.value, tt.fits, tt.missBy, tt.headroom)
		}
	}
	// The sentence every view prints.
	for _, tt := range []struct{ budget, want string }{
		{"101 spans/rollout", "budget 101 spans/rollout: fits, 100.00 spans/rollout (1.00 to spare)"},
		{"9.99KB/rollout", "budget 9.99 KB/rollout: misses by 10.00 bytes/rollout (10000.00 against 9990.00)"},
		{"150spans/s", "budget 150 spans/s: fits, 100.00 spans/s at 1.00 rollouts/s (50.00 to spare)"},
	} {
		rate := 0.0
		if strings.HasSuffix(tt.budget, "/s") {
			rate = 1
		}
		if got := mustBudget(t, tt.budget).Judge(rep, rate).String(); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.budget, got, tt.want)
		}
	}
	// The figures shown compare as the verdict says: a value just under
	// the limit does not read as the limit, nor a miss as 0.
	for _, tt := range []struct {
		budget      string
		spans, n    int
		long, short string
	}{
		{"50spans/rollout", 997, 20, "budget 50 spans/rollout: fits, 49.85 spans/rollout (0.15 to spare)", "fits (49.9 of 50 spans/rollout)"},
		{"50spans/rollout", 1004, 20, "budget 50 spans/rollout: misses by 0.20 spans/rollout (50.20 against 50.00)", "misses by 0.2 (50.2 of 50 spans/rollout)"},
		{"50spans/rollout", 12501, 250, "budget 50 spans/rollout: misses by 0.004 spans/rollout (50.004 against 50.000)", "misses by 0.004 (50.004 of 50 spans/rollout)"},
		{"50spans/rollout", 1000, 20, "budget 50 spans/rollout: fits, 50.00 spans/rollout (0.00 to spare)", "fits (50 of 50 spans/rollout)"},
		{"8 spans/rollout", 79, 10, "budget 8 spans/rollout: fits, 7.90 spans/rollout (0.10 to spare)", "fits (7.9 of 8 spans/rollout)"},
		{"200 spans/rollout", 1203, 10, "budget 200 spans/rollout: fits, 120.30 spans/rollout (79.70 to spare)", "fits (120 of 200 spans/rollout)"},
	} {
		v := mustBudget(t, tt.budget).Judge(&Report{Input: InputSummary{Rollouts: tt.n}, Result: Result{Spans: tt.spans}}, 0)
		if got := v.String(); got != tt.long {
			t.Errorf("%s, %d spans over %d: %q, want %q", tt.budget, tt.spans, tt.n, got, tt.long)
		}
		if got := v.Short(); got != tt.short {
			t.Errorf("%s, %d spans over %d: short %q, want %q", tt.budget, tt.spans, tt.n, got, tt.short)
		}
	}
	// Brief: the figures of Short, without the budget, in the unit the
	// budget was written in.
	for _, tt := range []struct {
		budget       string
		spans, bytes int64
		n            int
		rate         float64
		want, of     string
	}{
		{"50spans/rollout", 1004, 0, 20, 0, "misses by 0.2 (50.2)", "50 spans/rollout"},
		{"50spans/rollout", 997, 0, 20, 0, "fits (49.9)", "50 spans/rollout"},
		{"2GB/day", 0, 5_000_000, 20, 0.5, "misses by 9 (11)", "2 GB/day at 0.50 rollouts/s"},
		{"40 KB/rollout", 0, 799_000, 20, 0, "fits (39.95)", "40 KB/rollout"},
		{"1KiB/rollout", 0, 20 * 1025, 20, 0, "misses by 0.001 (1.001)", "1 KiB/rollout"},
	} {
		v := mustBudget(t, tt.budget).Judge(&Report{Input: InputSummary{Rollouts: tt.n}, Result: Result{Spans: int(tt.spans), Bytes: tt.bytes}}, tt.rate)
		if got := v.Brief(); got != tt.want {
			t.Errorf("%s: brief %q, want %q", tt.budget, got, tt.want)
		}
		if got := v.Against(); got != tt.of {
			t.Errorf("%s: against %q, want %q", tt.budget, got, tt.of)
		}
	}
	if v := mustBudget(t, "1spans/rollout").Judge(&Report{}, 0); !v.Fits || v.Value != 0 {
		t.Errorf("an empty capture: %+v, want 0 and fits", v)
	}
	for _, bad := range []struct{ in, want string }{
		{"100spans", "no /rollout, /s or /day"},
		{"100spans/week", `unknown period "week"`},
		{"lots/rollout", `"" is not a number >= 0`},
		{"-5spans/rollout", `"" is not a number >= 0`},
		{"5 furlongs/s", `unknown unit "furlongs"`},
	} {
		_, err := ParseBudget(bad.in)
		if err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), "want e.g. 120spans/rollout") {
			t.Errorf("ParseBudget(%q) = %v, want an error with %q", bad.in, err, bad.want)
		}
	}
}

func mustBudget(t *testing.T, s string) Budget {
	t.Helper()
	b, err := ParseBudget(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
