package main

import "github.com/nemo-gym/gymtrace/gate/whatif"

// latencyJSON is the latency object of `preview --json`: durations by
// operation over the selected rollouts, as captured.
type latencyJSON struct {
	Rollouts  int              `json:"rollouts"`
	Spans     int              `json:"spans"`
	ByName    []latencyRowJSON `json:"by_name"`
	ByGroup   []latencyRowJSON `json:"by_group"`
	ByService []latencyRowJSON `json:"by_service"`
}

type latencyRowJSON struct {
	Name    string  `json:"name,omitempty"`
	Group   string  `json:"group,omitempty"`
	Service string  `json:"service,omitempty"`
	Count   int     `json:"count"`
	Errors  int     `json:"errors"`
	P50MS   float64 `json:"p50_ms"`
	P90MS   float64 `json:"p90_ms"`
	P99MS   float64 `json:"p99_ms"`
	MaxMS   float64 `json:"max_ms"`
	TotalMS float64 `json:"total_ms"`
	SelfMS  float64 `json:"self_ms"`
}

func latencyOut(l *whatif.Latency) latencyJSON {
	rows := func(rs []whatif.LatencyRow, set func(*latencyRowJSON, string)) []latencyRowJSON {
		out := []latencyRowJSON{}
		for _, r := range rs {
			j := latencyRowJSON{Count: r.Count, Errors: r.Errors, P50MS: ms(r.P50), P90MS: ms(r.P90), P99MS: ms(r.P99),
				MaxMS: ms(r.Max), TotalMS: ms(r.Total), SelfMS: ms(r.Self)}
			set(&j, r.Key)
			out = append(out, j)
		}
		return out
	}
	return latencyJSON{
		Rollouts: l.Rollouts, Spans: l.Spans,
		ByName:    rows(l.ByName, func(j *latencyRowJSON, k string) { j.Name = k }),
		ByGroup:   rows(l.ByGroup, func(j *latencyRowJSON, k string) { j.Group = k }),
		ByService: rows(l.ByService, func(j *latencyRowJSON, k string) { j.Service = k }),
	}
}
