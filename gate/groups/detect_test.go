package groups

import (
	"testing"

	"github.com/nemo-gym/gymtrace/model"
)

func TestDetectVariant(t *testing.T) {
	// withResource re-interns the driver's resource with extra attributes,
	// as a Gym process reports them.
	withResource := func(svc string, attrs ...kv) func(*fleet) {
		return func(f *fleet) {
			var b model.AttrBuilder
			b.String(f.L, f.L.Intern([]byte("service.name")), []byte(svc))
			for _, a := range attrs {
				b.String(f.L, f.L.Intern([]byte(a.K)), []byte(a.V.(string)))
			}
			f.Res[svc] = f.St.Interner().InternResource(b.Sorted(f.St.Interner()), f.L.Intern([]byte(svc)))
		}
	}
	startupSpan := func(f *fleet) {
		f.NewTrace()
		f.Add(model.SpanID{}, "agent", "gym.server.startup", model.KindInternal)
	}
	cases := []struct {
		name       string
		mod        []func(*fleet)
		metrics    []string
		want       string
		wantSource string
	}{
		{"nothing tells", nil, nil, "G3", "newest: nothing in the capture tells"},
		{"version 0.5.1", []func(*fleet){withResource("agent", kv{K: "nemo.gym.version", V: "0.5.1"})}, nil, "G1", "resource nemo.gym.version=0.5.1"},
		{"version 0.5.1 and the concurrency metric", []func(*fleet){withResource("agent", kv{K: "nemo.gym.version", V: "0.5.1"})},
			[]string{ConcurrencyMetric}, "G1c", "resource nemo.gym.version=0.5.1, metric gym.concurrency.queue_wait_duration_ms"},
		{"version beats names", []func(*fleet){withResource("agent", kv{K: "nemo.gym.version", V: "0.5.1"}), startupSpan}, nil, "G1", "resource nemo.gym.version=0.5.1"},
		{"version 0.7.0rc0", []func(*fleet){withResource("agent", kv{K: "nemo.gym.version", V: "0.7.0rc0"})}, nil, "G3", "resource nemo.gym.version=0.7.0rc0"},
		{"orchestrator", []func(*fleet){withResource("nemo-gym/orchestrator")}, nil, "G1", "service.name nemo-gym/orchestrator (driver ends /orchestrator)"},
		{"orchestrator and model call metric", []func(*fleet){withResource("nemo-gym/orchestrator")}, []string{"gym.model.call_duration_ms"},
			"G1c", "service.name nemo-gym/orchestrator (driver ends /orchestrator), metric gym.model.call_duration_ms"},
		{"supervisor", []func(*fleet){withResource("nemo-gym/supervisor")}, nil, "G3", "service.name nemo-gym/supervisor (driver ends /supervisor)"},
		{"driver type", []func(*fleet){withResource("driver", kv{K: "nemo.gym.server.type", V: "supervisor"})}, nil, "G3", "resource nemo.gym.server.type=supervisor (driver)"},
		{"suffix beats type", []func(*fleet){withResource("nemo-gym/orchestrator", kv{K: "nemo.gym.server.type", V: "supervisor"})}, nil, "G1",
			"service.name nemo-gym/orchestrator (driver ends /orchestrator)"},
		{"nv.dl keys", []func(*fleet){withResource("nemo-gym/simple_agent", kv{K: "nemo.gym.server.name", V: "simple_agent"}, kv{K: "dl.rank", V: "0"}, kv{K: "nv.dl.rank", V: "0"})},
			nil, "G3", "resource nv.dl.rank (nemo-gym/simple_agent)"},
		{"dl.rank alone", []func(*fleet){withResource("nemo-gym/simple_agent", kv{K: "nemo.gym.server.name", V: "simple_agent"}, kv{K: "dl.rank", V: "0"})},
			nil, "G1", "resource dl.rank without nv.dl.rank (nemo-gym/simple_agent)"},
		{"dl.rank alone and the concurrency metric", []func(*fleet){withResource("nemo-gym/simple_agent", kv{K: "nemo.gym.server.name", V: "simple_agent"}, kv{K: "dl.rank", V: "0"})},
			[]string{ConcurrencyMetric}, "G1c", "resource dl.rank without nv.dl.rank (nemo-gym/simple_agent), metric " + ConcurrencyMetric},
		{"driver beats resource keys", []func(*fleet){withResource("nemo-gym/simple_agent", kv{K: "nemo.gym.server.name", V: "simple_agent"}, kv{K: "dl.rank", V: "0"}),
			withResource("nemo-gym/supervisor")}, nil, "G3", "service.name nemo-gym/supervisor (driver ends /supervisor)"},
		{"a process not Gym's tells nothing by its keys", []func(*fleet){withResource("nemo-rl", kv{K: "dl.rank", V: "0"})}, nil, "G3", "newest: nothing in the capture tells"},
		{"unknown version, then names", []func(*fleet){withResource("agent", kv{K: "nemo.gym.version", V: "0.2.0"}), startupSpan}, nil, "G3", "span gym.server.startup"},
		{"connection pool metric", nil, []string{"gym.http.connection_pool.size"}, "G3", "metric gym.http.connection_pool.size"},
		{"concurrency metric alone", nil, []string{ConcurrencyMetric}, "G1c", "metric " + ConcurrencyMetric},
		{"unknown version, nothing else", []func(*fleet){withResource("agent", kv{K: "nemo.gym.version", V: "0.2.0"})}, nil, "G3",
			"newest: nemo.gym.version 0.2.0 is no known variant's and nothing else tells"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := gymCapture(t, 2, 1, 1, true, func(f *fleet) {
				for _, m := range tc.mod {
					m(f)
				}
				for _, m := range tc.metrics {
					f.St.CountMetric(m, 1)
				}
			})
			v, source := DetectVariant(snap)
			if v.Name != tc.want || source != tc.wantSource {
				t.Errorf("DetectVariant = %s, %q; want %s, %q", v.Name, source, tc.want, tc.wantSource)
			}
		})
	}
	if v, source := DetectVariant(nil); v != Newest() || source != "newest: nothing captured yet" {
		t.Errorf("DetectVariant(nil) = %s, %q", v.Name, source)
	}
}
