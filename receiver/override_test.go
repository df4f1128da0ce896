package receiver

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
)

// gym eval submit's Collector writes a routing name over service.name and
// keeps the server's own in service.name.override: the process is the one
// the override names, in every face.
func TestServiceNameOverride(t *testing.T) {
	line := `{"resourceSpans":[` +
		`{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"eval-route-7"}},{"key":"service.name.override","value":{"stringValue":"nemo-gym/simple_agent"}},{"key":"run_id","value":{"stringValue":"r1"}}]},` +
		`"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"POST /run","kind":2,"startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]},` +
		`{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"eval-route-7"}},{"key":"service.name.override","value":{"stringValue":"nemo-gym/policy_model"}}]},` +
		`"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"c7ad6b7169203331","parentSpanId":"b7ad6b7169203331","name":"POST /v1/responses","kind":2,"startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]},` +
		`{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"plain"}}]},` +
		`"scopeSpans":[{"spans":[{"traceId":"1af7651916cd43dd8448eb211c80319c","spanId":"d7ad6b7169203331","name":"x","kind":1,"startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}` + "\n"
	p := filepath.Join(t.TempDir(), "traces.jsonl")
	if err := os.WriteFile(p, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	st := model.NewStore(model.Options{})
	defer st.Close()
	if _, err := ReadFiles(st, []string{p}, ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	st.Sync()
	snap := st.Snapshot()
	var got []string
	for _, r := range snap.Rollouts {
		for _, f := range r.Fragments {
			for i := range f.Spans {
				got = append(got, snap.ServiceName(f.Spans[i].Resource))
			}
		}
	}
	sort.Strings(got)
	want := []string{"nemo-gym/policy_model", "nemo-gym/simple_agent", "plain"}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("services = %v, want %v", got, want)
	}
}
