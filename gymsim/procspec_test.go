package gymsim

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/nemo-gym/gymtrace/gate"
)

// processSpecCases are fleets where one process reads a different
// span_groups than the rest.
var processSpecCases = []struct {
	name      string
	spec      string
	overrides map[string]string
}{
	{"none overridden", "default", nil},
	{"model without server", "all", map[string]string{modelName: "all,-server"}},
	{"agent without http_client", "default", map[string]string{agentName: "default,-http_client"}},
	{"resources without server", "per_rollout", map[string]string{resourcesName: "per_rollout,-server"}},
	{"driver without http_client", "all", map[string]string{driverName: "all,-http_client"}},
	{"only the model reads all", "server,http_client", map[string]string{modelName: "all"}},
}

func processSpecs(t *testing.T, overrides map[string]string) map[string]gate.Set {
	t.Helper()
	if overrides == nil {
		return nil
	}
	out := map[string]gate.Set{}
	for name, s := range overrides {
		out[name] = specMinus(t, s)
	}
	return out
}

// specMinus parses a span_groups value whose -group items are removed from
// the set the other items make (a shorthand of these tests, not Gym's).
func specMinus(t *testing.T, s string) gate.Set {
	t.Helper()
	var keep, drop []string
	for _, item := range strings.Split(s, ",") {
		if g, ok := strings.CutPrefix(item, "-"); ok {
			drop = append(drop, g)
		} else {
			keep = append(keep, item)
		}
	}
	set := spec(t, strings.Join(keep, ","))
	for _, d := range drop {
		set &^= spec(t, d)
	}
	return set
}

// TestProcessSpecHeader: each process injects traceparent exactly when its
// own span_groups has http_client, whatever the others run with.
func TestProcessSpecHeader(t *testing.T) {
	for _, tc := range processSpecCases {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan string, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got <- r.Header.Get("traceparent")
			}))
			defer srv.Close()
			cfg := Config{Seed: 1, Spec: spec(t, tc.spec), ProcessSpecs: processSpecs(t, tc.overrides), Rollouts: 1, Protocol: "none", RecordTruth: true}
			f, err := Start(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			f.Wait()
			for _, p := range f.procs {
				status, _, err := p.post(context.Background(), srv.URL+"/ng-rollout/r-x/get_weather", "r-x", map[string]any{})
				if err != nil || status != http.StatusOK {
					t.Fatalf("%s post: %d %v", p.name, status, err)
				}
				h := <-got
				want := cfg.specOf(p.name).Has(gate.HTTPClient)
				if (h != "") != want {
					t.Errorf("%s sent traceparent %q, want header=%v", p.name, h, want)
				}
			}
			if err := f.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestProcessSpecGating: a whole fleet with overrides emits from each
// process only the groups of that process's set, and a call joins its
// callee (a SERVER span under the caller's CLIENT span) exactly when the
// caller has http_client and the callee has server.
func TestProcessSpecGating(t *testing.T) {
	calls := [][2]string{{driverName, agentName}, {agentName, agentName}, {agentName, modelName}, {agentName, resourcesName}}
	for _, tc := range processSpecCases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Seed: 3, Spec: spec(t, tc.spec), ProcessSpecs: processSpecs(t, tc.overrides), Rollouts: 4, Protocol: "none", RecordTruth: true}
			f := runFleet(t, cfg)
			truth := f.Truth()
			byID := map[trace.SpanID]TruthSpan{}
			for _, s := range truth {
				byID[s.SpanID] = s
			}
			linked := map[string]bool{}
			for _, s := range truth {
				name := s.Service[len("nemo-gym/"):]
				if !cfg.specOf(name).Has(s.Group) {
					t.Errorf("%s emitted %s (group %s) with %s", name, s.Name, reg.Name(s.Group), reg.Format(cfg.specOf(name)))
				}
				if p, ok := byID[s.ParentID]; ok && s.Kind == trace.SpanKindServer && p.Kind == trace.SpanKindClient {
					linked[fmt.Sprintf("%s -> %s", p.Service[len("nemo-gym/"):], name)] = true
					if p.Callee != name {
						t.Errorf("CLIENT span of %s answered by %s records callee %q", p.Service, name, p.Callee)
					}
				}
				if s.Kind == trace.SpanKindClient && !slices.Contains(calls, [2]string{name, s.Callee}) {
					t.Errorf("CLIENT span of %s records callee %q, not a call the fleet makes", name, s.Callee)
				}
			}
			var want, have []string
			for _, c := range calls {
				if cfg.specOf(c[0]).Has(gate.HTTPClient) && cfg.specOf(c[1]).Has(gate.Server) {
					want = append(want, c[0]+" -> "+c[1])
				}
			}
			for k := range linked {
				have = append(have, k)
			}
			sort.Strings(want)
			sort.Strings(have)
			if !reflect.DeepEqual(have, want) {
				t.Errorf("joined calls %q, want %q", have, want)
			}
		})
	}
}
