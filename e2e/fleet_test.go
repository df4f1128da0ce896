package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/nemo-gym/gymtrace/gate"
	"github.com/nemo-gym/gymtrace/gymsim"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

var reg = gate.Default()

// rolloutsPerRun keeps each run small enough for 2 cores and big enough to
// hold every shape (503 retries, sandbox and verify failures) across seeds.
const rolloutsPerRun = 8

func seeds(short, full int) []int64 {
	n := full
	if testing.Short() {
		n = short
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(101 + i)
	}
	return out
}

func parse(t *testing.T, spec string) gate.Set {
	t.Helper()
	s, err := reg.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// receiverUnderTest is a store behind real OTLP gRPC and HTTP servers.
type receiverUnderTest struct {
	store              *model.Store
	srv                *receiver.Server
	grpcAddr, httpAddr string
}

func startReceiver(t *testing.T) *receiverUnderTest {
	t.Helper()
	st := model.NewStore(model.Options{})
	srv, err := receiver.NewServer(receiver.Config{Store: st, GRPCAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := &receiverUnderTest{store: st, srv: srv}
	r.grpcAddr, r.httpAddr = srv.Addrs()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("receiver shutdown: %v", err)
		}
		st.Close()
	})
	return r
}

// runFleet runs a fleet to completion and returns its truth. With a
// receiver, the fleet exports to it and the store is synced afterwards.
func runFleet(t *testing.T, r *receiverUnderTest, protocol string, seed int64, spec gate.Set) []gymsim.TruthSpan {
	t.Helper()
	truth, _ := runFleetStats(t, r, protocol, seed, spec)
	return truth
}

// runFleetStats is runFleet that also returns the fleet's counters.
func runFleetStats(t *testing.T, r *receiverUnderTest, protocol string, seed int64, spec gate.Set) ([]gymsim.TruthSpan, gymsim.Stats) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := gymsim.Config{Seed: seed, Spec: spec, Rollouts: rolloutsPerRun, Concurrency: 4, Protocol: protocol, RecordTruth: true}
	switch protocol {
	case "grpc":
		cfg.Endpoint = r.grpcAddr
	case "http":
		cfg.Endpoint = r.httpAddr
	}
	f, err := gymsim.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.Wait()
	// Shutdown flushes every exporter; the receiver answers only after the
	// store accepted a batch, so Sync then sees every span.
	if err := f.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	st := f.Stats()
	if st.ExportErrors != 0 {
		t.Fatalf("fleet export errors: %d (%s)", st.ExportErrors, st.LastExportError)
	}
	if st.Completed != rolloutsPerRun {
		t.Fatalf("fleet completed %d rollouts, want %d", st.Completed, rolloutsPerRun)
	}
	if r != nil {
		r.store.Sync()
	}
	return f.Truth(), st
}

// storedSpan is a span as the store holds it, with the rollout it assigned.
type storedSpan struct {
	TraceID   string
	ParentID  string
	Name      string
	Kind      string
	Service   string
	RolloutID string
}

func (s storedSpan) String() string {
	return fmt.Sprintf("%s %s svc=%s trace=%s parent=%s rollout=%s", s.Kind, s.Name, s.Service, s.TraceID, s.ParentID, s.RolloutID)
}

func storedSpans(snap *model.Snapshot) map[string]storedSpan {
	out := map[string]storedSpan{}
	add := func(f *model.Fragment, rid string) {
		for _, sp := range f.Spans {
			parent := ""
			if !sp.ParentID.IsZero() {
				parent = sp.ParentID.String()
			}
			out[sp.SpanID.String()] = storedSpan{
				TraceID: sp.TraceID.String(), ParentID: parent, Name: snap.Str(sp.Name),
				Kind: sp.Kind.String(), Service: snap.ServiceName(sp.Resource), RolloutID: rid,
			}
		}
	}
	for _, r := range snap.Rollouts {
		for _, f := range r.Fragments {
			add(f, r.ID)
		}
	}
	for _, j := range snap.Jobs {
		add(j, "")
	}
	return out
}

var kindNames = map[trace.SpanKind]string{
	trace.SpanKindInternal: "INTERNAL", trace.SpanKindServer: "SERVER", trace.SpanKindClient: "CLIENT",
}

func truthSpan(s gymsim.TruthSpan) storedSpan {
	parent := ""
	if s.ParentID.IsValid() {
		parent = s.ParentID.String()
	}
	return storedSpan{
		TraceID: s.TraceID.String(), ParentID: parent, Name: s.Name,
		Kind: kindNames[s.Kind], Service: s.Service, RolloutID: s.RolloutID,
	}
}

var groundTruthSpecs = []string{"all", "default", "per_rollout", "server,http_client,verify", "server,rollout,verify", "default,sandbox"}

// TestStoreMatchesFleet: for several seeds and specs, the store holds
// exactly the spans the fleet emitted, with the same ids, parents, names,
// kinds and services, and assigns each to the rollout the fleet made it for.
func TestStoreMatchesFleet(t *testing.T) {
	for i, seed := range seeds(3, 10) {
		for j, spec := range groundTruthSpecs {
			protocol := []string{"grpc", "http"}[(i+j)%2]
			t.Run(fmt.Sprintf("seed=%d/spec=%s/%s", seed, spec, protocol), func(t *testing.T) {
				set := parse(t, spec)
				r := startReceiver(t)
				truth, fst := runFleetStats(t, r, protocol, seed, set)
				snap := r.store.Snapshot()
				checkMetric(t, set, fst, snap)
				got := storedSpans(snap)
				if snap.Stats.Duplicates != 0 || snap.Stats.Refused != 0 {
					t.Errorf("store stats %+v", snap.Stats)
				}
				if len(got) != len(truth) || snap.Stats.Stored != len(truth) {
					t.Errorf("stored %d spans (stats %d), fleet emitted %d", len(got), snap.Stats.Stored, len(truth))
				}
				bad := 0
				for _, ts := range truth {
					want := truthSpan(ts)
					g, ok := got[ts.SpanID.String()]
					if !ok || g != want {
						if bad++; bad <= 5 {
							t.Errorf("span %s:\n  stored %v (present=%v)\n  sent   %v", ts.SpanID, g, ok, want)
						}
					}
				}
				checkJoining(t, set, truth, snap)
			})
		}
	}
}

// checkMetric: the concurrency group's histogram reaches the store, point
// for point as the fleet exported it, exactly when the group is on; with it
// off no instrument exists and nothing is sent.
func checkMetric(t *testing.T, set gate.Set, fst gymsim.Stats, snap *model.Snapshot) {
	t.Helper()
	got := snap.Metrics[gate.ConcurrencyMetric]
	if got != fst.MetricPoints || snap.Stats.MetricPoints != fst.MetricPoints {
		t.Errorf("store holds %d %s points (%d metric points in all), fleet exported %d",
			got, gate.ConcurrencyMetric, snap.Stats.MetricPoints, fst.MetricPoints)
	}
	if on := set.Has(gate.Concurrency); on != (got > 0) {
		t.Errorf("concurrency on=%v, but the store holds %d %s points", on, got, gate.ConcurrencyMetric)
	}
}

// checkJoining: with http_client or server off every rollout splits into
// several traces; with both on each rollout is one trace, and with job on
// the whole run is one trace.
func checkJoining(t *testing.T, set gate.Set, truth []gymsim.TruthSpan, snap *model.Snapshot) {
	t.Helper()
	joinable := set.Has(gate.HTTPClient) && set.Has(gate.Server)
	if len(snap.Rollouts) != rolloutsPerRun {
		t.Errorf("store has %d rollouts, want %d", len(snap.Rollouts), rolloutsPerRun)
	}
	for _, r := range snap.Rollouts {
		if joinable && r.Traces != 1 {
			t.Errorf("rollout %s: %d traces with %s on", r.ID, r.Traces, reg.Format(set))
		}
		if !joinable && r.Traces < 2 {
			t.Errorf("rollout %s: %d trace(s), want a split with %s", r.ID, r.Traces, reg.Format(set))
		}
	}
	traces := map[trace.TraceID]bool{}
	for _, s := range truth {
		traces[s.TraceID] = true
	}
	if snap.Stats.Traces != len(traces) {
		t.Errorf("store holds %d traces, fleet emitted %d", snap.Stats.Traces, len(traces))
	}
	if set.Has(gate.Job) && joinable && len(traces) != 1 {
		t.Errorf("job on: %d traces, want the whole run in one", len(traces))
	}
}

var predictionSpecs = []string{"default", "per_rollout", "all", "server,http_client,verify", "server,rollout,verify", "http_client,rollout", "default,sandbox"}

// TestPreviewPredictsFleet: the what-if preview of a spec computed from an
// `all` capture equals what the fleet really emits under that spec with the
// same seed: kept spans per rollout and per group, traces, and joined/split
// per rollout.
func TestPreviewPredictsFleet(t *testing.T) {
	for i, seed := range seeds(5, 20) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := startReceiver(t)
			runFleet(t, r, []string{"grpc", "http"}[i%2], seed, reg.All())
			snap := r.store.Snapshot()
			eng := gate.NewEngine(reg)
			for _, spec := range predictionSpecs {
				t.Run("spec="+spec, func(t *testing.T) {
					set := parse(t, spec)
					rep := eng.Preview(snap, set)
					truth := runFleet(t, nil, "none", seed, set)
					if diff := comparePreview(rep, truth); diff != "" {
						t.Errorf("preview of %q from the all capture differs from what the fleet emits:\n%s", spec, diff)
					}
				})
			}
		})
	}
}

// comparePreview lists every difference between a report and the truth.
func comparePreview(rep *gate.Report, truth []gymsim.TruthSpan) string {
	var diffs []string
	add := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }

	perRollout := map[string]int{}
	rolloutTraces := map[string]map[trace.TraceID]bool{}
	perGroup := map[gate.Group]int{}
	traces := map[trace.TraceID]bool{}
	for _, s := range truth {
		perGroup[s.Group]++
		traces[s.TraceID] = true
		if s.RolloutID == "" {
			continue
		}
		perRollout[s.RolloutID]++
		if rolloutTraces[s.RolloutID] == nil {
			rolloutTraces[s.RolloutID] = map[trace.TraceID]bool{}
		}
		rolloutTraces[s.RolloutID][s.TraceID] = true
	}
	if rep.Result.Spans != len(truth) {
		add("spans: preview %d, fleet %d", rep.Result.Spans, len(truth))
	}
	if rep.Result.Traces != len(traces) {
		add("traces: preview %d, fleet %d", rep.Result.Traces, len(traces))
	}
	seen := map[string]bool{}
	for _, rr := range rep.PerRollout {
		seen[rr.ID] = true
		want := perRollout[rr.ID]
		wantTraces := len(rolloutTraces[rr.ID])
		if rr.Spans != want {
			add("rollout %s: preview keeps %d spans, fleet emits %d", rr.ID, rr.Spans, want)
		}
		if rr.Traces != wantTraces {
			add("rollout %s: preview %d traces, fleet %d", rr.ID, rr.Traces, wantTraces)
		}
		if rr.Joined != (wantTraces == 1) {
			add("rollout %s: preview joined=%v, fleet traces=%d", rr.ID, rr.Joined, wantTraces)
		}
	}
	for id := range perRollout {
		if !seen[id] {
			add("rollout %s: emitted by the fleet, missing from the preview", id)
		}
	}
	for _, gc := range rep.PerGroup {
		if gc.Kept != perGroup[gc.Group] {
			add("group %s: preview keeps %d, fleet emits %d", reg.Name(gc.Group), gc.Kept, perGroup[gc.Group])
		}
		delete(perGroup, gc.Group)
	}
	for g, n := range perGroup {
		add("group %s: fleet emits %d, absent from the preview", reg.Name(g), n)
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "\n")
}
