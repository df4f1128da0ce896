package evidence_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/evidence"
	"github.com/nemo-gym/gymtrace/gate/internal/testfleet"
	"github.com/nemo-gym/gymtrace/gate/rollouts"
)

// benchRows is the size of the yardstick: 100k result lines.
const benchRows = 100_000

var (
	benchOnce sync.Once
	benchDir  string
	benchSt   *rollouts.Structure
)

// benchSetup writes 100k result lines in Gym's shape (a conversation, a
// response with usage, ng_perf, a model-call capture, about 1.7 KB a line,
// in completion order, not input order) and traces 100k rollouts of the
// same ids.
func benchSetup(b *testing.B) (string, *rollouts.Structure) {
	b.Helper()
	benchOnce.Do(func() {
		dir, err := os.MkdirTemp("", "evidence-bench")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = dir
		f, err := os.Create(filepath.Join(dir, "rollouts.jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriter(f)
		for k := 0; k < benchRows; k++ {
			i := (k * 7919) % benchRows // completion order is not input order
			fmt.Fprintf(w, `{"responses_create_params": {"input": [{"role": "system", "content": "You are a helpful assistant that answers with tools when it must."}, {"role": "user", "content": "task %d: what is the weather in the city where the 1998 world cup final was played, and what should I pack for three days there?"}], "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]}, `+
				`"response": {"id": "resp_%d", "object": "response", "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It is 21C and sunny in Saint-Denis; pack light layers, sunscreen and a light rain jacket for the evenings, which can turn cool near the river."}]}], "usage": {"input_tokens": %d, "output_tokens": 57, "total_tokens": %d}}, `+
				`"reward": %d, "_ng_task_index": %d, "_ng_rollout_index": 0, "_ng_rollout_id": "r-%d", "agent_ref": {"type": "responses_api_agents", "name": "simple_agent"}, `+
				`"ng_perf": {"num_turns": 2, "num_tool_calls": 1, "prompt_tokens": %d, "completion_tokens": 57, "total_latency_ms": 812.5, "token_observability_coverage": 1.0}, `+
				`"ng_model_call_capture": [{"model_call_id": "m%d-0", "started_at": 1700000000.25, "completed_at": 1700000000.5, "status_code": 200, "finish_reason": "tool_calls", "prompt_tokens": 300, "completion_tokens": 20, "latency_total_ms": 250.0}, {"model_call_id": "m%d-1", "started_at": 1700000000.75, "completed_at": 1700000001.0, "status_code": 200, "finish_reason": "stop", "prompt_tokens": 340, "completion_tokens": 37, "latency_total_ms": 250.0}]}`+"\n",
				i, i, 600+i%50, 657+i%50, i%2, i/4, i, 600+i%50, i, i)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		snap := testfleet.GymCapture(b, benchRows, 0, 0, false, nil)
		benchSt = rollouts.NewFinder().Structure(snap)
	})
	return benchDir, benchSt
}

// BenchmarkEvidenceJoin reads 100k result lines and joins them to 100k
// traced rollouts by id; B/rollout is what the set and its join hold per
// joined rollout, beyond the traces.
func BenchmarkEvidenceJoin(b *testing.B) {
	dir, st := benchSetup(b)
	if len(st.Rollouts) != benchRows {
		b.Fatalf("%d traced rollouts, want %d", len(st.Rollouts), benchRows)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var j *evidence.Joined
	for i := 0; i < b.N; i++ {
		set, err := evidence.Read(dir)
		if err != nil {
			b.Fatal(err)
		}
		j = evidence.Join(set, st, true)
	}
	b.StopTimer()
	if j.Coverage.Exact != benchRows {
		b.Fatalf("joined %d, want %d", j.Coverage.Exact, benchRows)
	}
	j = nil
	held := heldBy(func() any {
		set, _ := evidence.Read(dir)
		return evidence.Join(set, st, true)
	})
	b.ReportMetric(float64(held)/benchRows, "B/rollout")
}

// heldBy is the live heap that what make returns keeps, after collection.
func heldBy(make func() any) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := make()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	return after.HeapAlloc - before.HeapAlloc
}
