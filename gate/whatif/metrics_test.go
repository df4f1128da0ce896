package whatif

import (
	"github.com/nemo-gym/gymtrace/gate/groups"
	"reflect"
	"testing"
)

// TestPreviewMetricsSeen checks that a span-less group of the spec is shown
// at work exactly when the capture holds the metric it gates.
func TestPreviewMetricsSeen(t *testing.T) {
	withStartup, err := g1c().Load("g.yaml", []byte(`
groups:
  - name: warmup
    description: model warm-up
    metric: gym.warmup.duration_ms
`))
	if err != nil {
		t.Fatal(err)
	}
	warmup, _ := withStartup.Lookup("warmup")
	tests := []struct {
		name    string
		reg     *groups.Registry
		spec    string
		metrics map[string]int64
		want    map[groups.Group]int64
		noSpans []string
	}{
		{name: "per_rollout with the metric", reg: g1c(), spec: "per_rollout",
			metrics: map[string]int64{groups.ConcurrencyMetric: 12, "http.server.active_requests": 3},
			want:    map[groups.Group]int64{groups.Concurrency: 12}, noSpans: []string{"concurrency"}},
		{name: "per_rollout without it", reg: g1c(), spec: "per_rollout",
			metrics: map[string]int64{"http.server.active_requests": 3},
			noSpans: []string{"concurrency"}},
		{name: "default does not gate it", reg: g1c(), spec: "default",
			metrics: map[string]int64{groups.ConcurrencyMetric: 12}},
		{name: "all: training groups stay span-less", reg: g1c(), spec: "all",
			metrics: map[string]int64{groups.ConcurrencyMetric: 1},
			want:    map[groups.Group]int64{groups.Concurrency: 1},
			noSpans: []string{"concurrency", "checkpoint", "evaluate", "model_init", "load_checkpoint", "step", "forward_backward", "optimizer"}},
		{name: "a file group's metric", reg: withStartup, spec: "default,warmup",
			metrics: map[string]int64{"gym.warmup.duration_ms": 4, groups.ConcurrencyMetric: 9},
			want:    map[groups.Group]int64{warmup: 4}, noSpans: []string{"warmup"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap := gymCapture(t, 2, 1, 1, true, func(f *fleet) {
				for name, n := range tc.metrics {
					f.St.CountMetric(name, n)
				}
			})
			spec, err := tc.reg.Parse(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			rep := NewEngine(tc.reg).Preview(snap, spec)
			if !reflect.DeepEqual(rep.MetricsSeen, tc.want) {
				t.Errorf("MetricsSeen = %v, want %v", rep.MetricsSeen, tc.want)
			}
			var none []string
			for _, g := range rep.NoSpans {
				none = append(none, tc.reg.Name(g))
			}
			if !reflect.DeepEqual(none, tc.noSpans) {
				t.Errorf("NoSpans = %v, want %v", none, tc.noSpans)
			}
		})
	}
}

// TestConcurrencyGatesItsMetric pins the registry entry the preview and
// the simulated fleet both rely on.
func TestConcurrencyGatesItsMetric(t *testing.T) {
	info := g1c().Info(groups.Concurrency)
	if info.Metric != groups.ConcurrencyMetric || info.EmitsSpans {
		t.Errorf("concurrency = %+v, want metric %s and no spans", info, groups.ConcurrencyMetric)
	}
	for i, g := range g1c().Groups() {
		if groups.Group(i) != groups.Concurrency && g.Metric != "" {
			t.Errorf("%s gates metric %q; only concurrency should", g.Name, g.Metric)
		}
	}
}
