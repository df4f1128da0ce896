package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gymsim"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// reg is the Gym variant the simulated fleet behaves as: G1's groups and
// the concurrency metric (G1c).
var reg = func() *groups.Registry {
	v, err := groups.LookupVariant("G1c")
	if err != nil {
		panic(err)
	}
	return v.Registry()
}()

// rolloutsPerRun keeps each run small enough for 2 cores and big enough to
// hold every shape (503 retries, sandbox and verify failures) across seeds.
const rolloutsPerRun = 8

func seeds(short, full int) []int64 {
	n := full
	if testing.Short() || raceOn {
		n = short
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(101 + i)
	}
	return out
}

func parse(t *testing.T, spec string) groups.Set {
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
func runFleet(t *testing.T, r *receiverUnderTest, protocol string, cfg gymsim.Config) []gymsim.TruthSpan {
	t.Helper()
	truth, _ := runFleetStats(t, r, protocol, cfg)
	return truth
}

// runFleetStats is runFleet that also returns the fleet's counters. cfg's
// seed, spec and switches are kept; the rest is set here.
func runFleetStats(t *testing.T, r *receiverUnderTest, protocol string, cfg gymsim.Config) ([]gymsim.TruthSpan, gymsim.Stats) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Some latency, as real servers have: with none, every call of every
	// rollout overlaps and no timing tells them apart.
	cfg.Rollouts, cfg.Concurrency, cfg.Protocol, cfg.RecordTruth, cfg.Latency = rolloutsPerRun, 4, protocol, true, time.Millisecond
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
	TraceID  string
	ParentID string
	Name     string
	Kind     string
	Service  string
}

func (s storedSpan) String() string {
	return fmt.Sprintf("%s %s svc=%s trace=%s parent=%s", s.Kind, s.Name, s.Service, s.TraceID, s.ParentID)
}

func storedSpans(snap *model.Snapshot) map[string]storedSpan {
	out := map[string]storedSpan{}
	add := func(f *model.Fragment) {
		for i, sp := range f.Spans {
			parent := ""
			if up := f.ParentID(i); !up.IsZero() {
				parent = up.String()
			}
			out[sp.SpanID.String()] = storedSpan{
				TraceID: f.TraceID.String(), ParentID: parent, Name: snap.Str(sp.Name),
				Kind: sp.Kind.String(), Service: snap.ServiceName(sp.Resource),
			}
		}
	}
	for _, r := range snap.Rollouts {
		for _, f := range r.Fragments {
			add(f)
		}
	}
	for _, j := range snap.Jobs {
		add(j)
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
		Kind: kindNames[s.Kind], Service: s.Service,
	}
}

// groundTruthCases are Gym settings: the specs of the real captures, a
// variant's own, observability, aiohttp, carried-over contexts.
var groundTruthCases = []gymsim.Config{
	{Spec: "all"}, {Spec: "default"}, {Spec: "per_rollout"}, {Spec: "server,http_client,verify"},
	{Spec: "server,rollout,verify"}, {Spec: "default,sandbox"}, {Spec: "all", Observability: true},
	{Spec: "server,rollout,verify", AIOHTTP: true}, {Spec: "per_rollout", ContextLeak: 0.1},
	{Variant: "G1c", Spec: "per_rollout"}, {Variant: "G3"},
}

func caseName(c gymsim.Config) string {
	var b strings.Builder
	if c.Variant != "" {
		b.WriteString(c.Variant + ":")
	}
	b.WriteString("spec=" + c.Spec)
	if c.Observability {
		b.WriteString("/obs")
	}
	if c.AIOHTTP {
		b.WriteString("/aiohttp")
	}
	if c.Standalone {
		b.WriteString("/standalone")
	}
	if c.ContextLeak > 0 {
		fmt.Fprintf(&b, "/leak=%g", c.ContextLeak)
	}
	for _, name := range gymsim.ProcessNames() {
		if s, ok := c.ProcessSpecs[name]; ok {
			fmt.Fprintf(&b, "/%s=%s", name, s)
		}
	}
	return b.String()
}

// TestStoreMatchesFleet: for several seeds and Gym settings, the store
// holds exactly the spans the fleet emitted, with the same ids, parents,
// names, kinds and services, and the same traces.
func TestStoreMatchesFleet(t *testing.T) {
	for i, seed := range seeds(3, 10) {
		for j, c := range groundTruthCases {
			protocol := []string{"grpc", "http"}[(i+j)%2]
			t.Run(fmt.Sprintf("seed=%d/%s/%s", seed, caseName(c), protocol), func(t *testing.T) {
				r := startReceiver(t)
				c.Seed = seed
				truth, fst := runFleetStats(t, r, protocol, c)
				snap := r.store.Snapshot()
				checkMetric(t, c, fst, snap)
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
				traces := map[trace.TraceID]bool{}
				for _, s := range truth {
					traces[s.TraceID] = true
				}
				if snap.Stats.Traces != len(traces) {
					t.Errorf("store holds %d traces, fleet emitted %d", snap.Stats.Traces, len(traces))
				}
			})
		}
	}
}

// checkMetric: the queue-wait histogram reaches the store, point for point
// as the fleet exported it, exactly when the variant records it and the
// concurrency group is on; otherwise no instrument exists and nothing is
// sent.
func checkMetric(t *testing.T, c gymsim.Config, fst gymsim.Stats, snap *model.Snapshot) {
	t.Helper()
	got := snap.Metrics[gymsim.QueueWaitMetric]
	if got != fst.QueueWaitPoints || snap.Stats.MetricPoints != fst.MetricPoints {
		t.Errorf("store holds %d %s points (%d metric points in all), fleet exported %d (%d in all)",
			got, gymsim.QueueWaitMetric, snap.Stats.MetricPoints, fst.QueueWaitPoints, fst.MetricPoints)
	}
	if fst.MetricPoints == 0 {
		t.Errorf("the fleet exported no metric points (gym.rollout.duration_ms, http.server.duration, …)")
	}
	v, _ := gymsim.LookupVariant(c.Variant)
	if on := v.QueueWaitMetric && v.Resolve(c.Spec).Groups[gymsim.GroupConcurrency]; on != (got > 0) {
		t.Errorf("queue wait recorded=%v, but the store holds %d %s points", on, got, gymsim.QueueWaitMetric)
	}
}
