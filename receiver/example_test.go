package receiver_test

import (
	"fmt"

	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// DecodeJSON reads an OTLP/JSON ExportTraceServiceRequest, as a Gym
// process's exporter posts it to /v1/traces, into a batch for the store.
// A span whose ids are wrong is refused and counted, with its place.
func ExampleDecodeJSON() {
	st := model.NewStore(model.Options{QueueLen: 4})
	defer st.Close()
	req := `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"nemo-gym/agent"}}]},
	  "scopeSpans":[{"spans":[
	    {"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"POST /run","kind":2,
	     "startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000002000000000"},
	    {"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b71","name":"gym.rollout"}]}]}]}`
	batch, rep, err := receiver.DecodeJSON(model.NewLocal(st.Interner()), []byte(req), receiver.Limits{})
	if err != nil {
		panic(err)
	}
	for i, sp := range batch.Spans {
		fmt.Printf("%v %v %s %s %dms\n", batch.Traces[i], sp.SpanID, st.Interner().Str(sp.Name), sp.Kind, (sp.End-sp.Start)/1e6)
	}
	fmt.Printf("rejected %d: %s\n", rep.Rejected, rep.Reason)
	// Output:
	// 0af7651916cd43dd8448eb211c80319c b7ad6b7169203331 POST /run SERVER 2000ms
	// rejected 1: resource_spans[0].scope_spans[0].spans[1]: span_id has 4 bytes, want 8
}
