package main

import (
	"context"
	"runtime"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/mcpserver"
	"github.com/nemo-gym/gymtrace/model"
)

// BenchmarkMCPCacheHeap is the heap an MCP server keeps over 1M spans of
// the real Gym run's request (20,000 rollouts), the store still live: the
// store's own (store-B/span), what the first call keeps (the engine's
// structure and join check, engine-B/span), and what preview, recommend
// and cohort keep more (their per-version caches and the memo of their
// answers): the heap held after each, less the heap before it, read after
// a collection.
func BenchmarkMCPCacheHeap(b *testing.B) {
	const spans = 1_000_000
	bodies := yardstickBodies(b, "req-realgym-run-5072.bin.gz", spans)
	ctx := context.Background()
	var store, engine, preview, recommend, cohort float64
	for b.Loop() {
		h0 := liveHeap()
		st := model.NewStore(model.Options{})
		add := storeAdder(b, st)
		for _, body := range bodies {
			add(body)
		}
		st.Sync()
		st.Sync() // the last fragments' arrays settle
		h1 := liveHeap()
		cfg := mcpserver.Config{Source: st, Registry: groups.Default(), Variant: report.Variant{GymVariant: "G1", GymVariantSource: "bench"},
			Setting: report.Setting{Spec: "all", Source: "bench"}}
		ct, stt := mcp.NewInMemoryTransports()
		ss, err := mcpserver.New(cfg).MCP().Connect(ctx, stt, nil)
		if err != nil {
			b.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		call := func(name string, args map[string]any) *mcp.CallToolResult {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil || res.IsError {
				b.Fatalf("%s: %v %+v", name, err, res)
			}
			return res
		}
		call("check", nil)
		id := rolloutIDs(b, call("list_rollouts", map[string]any{"limit": 1}))[0]
		h2 := liveHeap()
		call("preview", map[string]any{"spec": "default"})
		h3 := liveHeap()
		call("recommend", map[string]any{"budget": "30spans/rollout"})
		h4 := liveHeap()
		call("cohort", map[string]any{"cohort": "id=" + id})
		h5 := liveHeap()
		store, engine = float64(h1)-float64(h0), float64(h2)-float64(h1)
		preview, recommend, cohort = float64(h3)-float64(h2), float64(h4)-float64(h3), float64(h5)-float64(h4)
		cs.Close()
		ss.Close()
		runtime.KeepAlive(add) // and the Local it holds
		st.Close()
	}
	b.ReportMetric(store/spans, "store-B/span")
	b.ReportMetric(engine/spans, "engine-B/span")
	b.ReportMetric((preview+recommend+cohort)/spans, "cache-B/span")
	b.ReportMetric(preview/spans, "preview-B/span")
	b.ReportMetric(recommend/spans, "recommend-B/span")
	b.ReportMetric(cohort/spans, "cohort-B/span")
	b.ReportMetric(100*(preview+recommend+cohort)/store, "cache-%store")
}
