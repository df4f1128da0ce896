package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/mcpserver"
	"github.com/nemo-gym/gymtrace/model"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// BenchmarkMCPTools is one tool call, as a client sees it (JSON-RPC over an
// in-memory pipe, the arguments and the answer checked against their
// schemas), over 100k and 1M spans of the real Gym run's request (fresh
// ids per copy). first is the first call on a new server, which pays for
// finding the rollouts and the join check; every other row is a call on a
// server that answered once (the engine caches by fragment version), and
// for preview, recommend and cohort the same call again: warm, the answer
// the server kept for the snapshot. Their cold rows are a call whose
// answer was never kept: new-args asks of the same snapshot what it was
// not asked yet (another spec, budget or cohort each time), new-snapshot
// asks the same after 64 more spans arrived (the first of a copy of the
// request, fresh ids), as a live store publishes them while a run goes
// on: a new snapshot, a rollout more, the others unchanged.
func BenchmarkMCPTools(b *testing.B) {
	const reserve = 200 // trickles kept back for the new-snapshot rows
	for _, spans := range []int{100_000, 1_000_000} {
		st := model.NewStore(model.Options{})
		add := storeAdder(b, st)
		for _, body := range yardstickBodies(b, "req-realgym-run-5072.bin.gz", spans) {
			add(body)
		}
		st.Sync()
		var more [][]byte
		copies := 0
		stored := yardstickCopies(b, "req-realgym-run-5072.bin.gz", spans, func(*coltrace.ExportTraceServiceRequest) {}) / 5072
		yardstickCopies(b, "req-realgym-run-5072.bin.gz", spans+reserve*5072, func(req *coltrace.ExportTraceServiceRequest) {
			// Copies past the stored ones: ids no stored span has.
			if copies++; copies <= stored || len(more) == reserve {
				return
			}
			cut := proto.Clone(req).(*coltrace.ExportTraceServiceRequest)
			cut.ResourceSpans = cut.ResourceSpans[:1]
			rs := cut.ResourceSpans[0]
			rs.ScopeSpans = rs.ScopeSpans[:1]
			rs.ScopeSpans[0].Spans = rs.ScopeSpans[0].Spans[:min(64, len(rs.ScopeSpans[0].Spans))]
			body, err := proto.Marshal(cut)
			if err != nil {
				b.Fatal(err)
			}
			more = append(more, body)
		})
		reg := groups.Default()
		cfg := mcpserver.Config{Source: st, Registry: reg, Variant: report.Variant{GymVariant: "G1", GymVariantSource: "bench"},
			Setting: report.Setting{Spec: "all", Source: "bench"}}
		ctx := context.Background()
		connect := func(b *testing.B) *mcp.ClientSession {
			ct, stt := mcp.NewInMemoryTransports()
			ss, err := mcpserver.New(cfg).MCP().Connect(ctx, stt, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { ss.Close() })
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { cs.Close() })
			return cs
		}
		call := func(b *testing.B, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil || res.IsError {
				b.Fatalf("%s: %v %+v", name, err, res)
			}
			return res
		}
		size := fmt.Sprintf("%dk", spans/1000)
		b.Run(size+"/first", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				cs := connect(b)
				b.StartTimer()
				call(b, cs, "status", nil)
			}
		})
		cs := connect(b)
		res := call(b, cs, "list_rollouts", map[string]any{"limit": 1, "sort": "-spans"})
		id := res.StructuredContent.(map[string]any)["rollouts"].([]any)[0].(map[string]any)["rollout_id"].(string)
		d := call(b, cs, "get_rollout", map[string]any{"rollout_id": id, "max_nodes": 2})
		span := d.StructuredContent.(map[string]any)["tree"].([]any)[0].(map[string]any)["span_id"].(string)
		for _, tc := range []struct {
			tool string
			args map[string]any
		}{
			{"status", nil},
			{"list_rollouts", map[string]any{"limit": 50}},
			{"list_rollouts", map[string]any{"limit": 50, "sort": "-duration", "filter": "service=policy_model"}},
			{"get_rollout", map[string]any{"rollout_id": id}},
			{"get_spans", map[string]any{"span_ids": []string{span}}},
			{"get_spans", map[string]any{"span_ids": []string{span}, "rollout_id": id}},
			{"check", nil},
			{"explain", map[string]any{"rollout_id": id}},
			{"critical_path", map[string]any{"rollout_id": id}},
			{"cohort", map[string]any{"cohort": "id=" + id}},
			{"groups", nil},
			{"preview", map[string]any{"spec": "default"}},
			{"compare", map[string]any{"a": id, "b_spec": "default"}},
			{"recommend", map[string]any{"budget": "30spans/rollout"}},
		} {
			name := tc.tool
			if tc.args["filter"] != nil {
				name += "+filter+sort"
			}
			if tc.args["rollout_id"] != nil && tc.tool == "get_spans" {
				name += "+rollout"
			}
			b.Run(size+"/"+name, func(b *testing.B) {
				b.ReportAllocs()
				call(b, cs, tc.tool, tc.args) // answered once: warm
				for b.Loop() {
					call(b, cs, tc.tool, tc.args)
				}
			})
		}
		// Cold: arguments not asked yet of the snapshot.
		ids := rolloutIDs(b, call(b, cs, "list_rollouts", map[string]any{"limit": 500}))
		specs := []string{"default", "default,sandbox", "per_rollout", "all", "default,verify", "model_call", "server,http_client", "default,model_call"}
		for _, tc := range []struct {
			tool string
			args func(i int) map[string]any
		}{
			{"cohort", func(i int) map[string]any { return map[string]any{"cohort": "id=" + ids[i%len(ids)]} }},
			{"preview", func(i int) map[string]any { return map[string]any{"spec": specs[i%len(specs)], "rollouts": 1000 + i} }},
			{"recommend", func(i int) map[string]any { return map[string]any{"budget": fmt.Sprintf("%dspans/rollout", 30+i)} }},
		} {
			b.Run(size+"/"+tc.tool+"/new-args", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					call(b, cs, tc.tool, tc.args(i))
					i++
				}
			})
		}
		// Cold: the same arguments after more spans arrived.
		for _, tc := range []struct {
			tool string
			args map[string]any
		}{
			{"cohort", map[string]any{"cohort": "id=" + id}},
			{"preview", map[string]any{"spec": "default"}},
			{"recommend", map[string]any{"budget": "30spans/rollout"}},
		} {
			b.Run(size+"/"+tc.tool+"/new-snapshot", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					if len(more) == 0 {
						b.Fatal("no request left to add: run with a smaller -benchtime")
					}
					add(more[0])
					more = more[1:]
					st.Sync()
					b.StartTimer()
					call(b, cs, tc.tool, tc.args)
				}
			})
		}
		st.Close()
	}
}

// rolloutIDs are the ids list_rollouts answered.
func rolloutIDs(b *testing.B, res *mcp.CallToolResult) []string {
	var ids []string
	for _, r := range res.StructuredContent.(map[string]any)["rollouts"].([]any) {
		ids = append(ids, r.(map[string]any)["rollout_id"].(string))
	}
	if len(ids) == 0 {
		b.Fatal("no rollouts listed")
	}
	return ids
}
