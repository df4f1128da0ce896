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
)

// BenchmarkMCPTools is one tool call, as a client sees it (JSON-RPC over an
// in-memory pipe, the arguments and the answer checked against their
// schemas), over 100k and 1M spans of the real Gym run's request (fresh
// ids per copy). first is the first call on a new server, which pays for
// finding the rollouts and the join check; every other row is a call on a
// server that answered once (the engine caches by fragment version).
func BenchmarkMCPTools(b *testing.B) {
	for _, spans := range []int{100_000, 1_000_000} {
		st := model.NewStore(model.Options{})
		add := storeAdder(b, st)
		for _, body := range yardstickBodies(b, "req-realgym-run-5072.bin.gz", spans) {
			add(body)
		}
		st.Sync()
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
				for b.Loop() {
					call(b, cs, tc.tool, tc.args)
				}
			})
		}
		st.Close()
	}
}
