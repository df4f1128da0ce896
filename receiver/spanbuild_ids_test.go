package receiver

import (
	"testing"

	"github.com/nemo-gym/gymtrace/model"
)

// TestSpanIDsReason: the one rule every decoder rejects a span's ids by,
// the trace's fault named before the span's, the parent's, and zero ids.
func TestSpanIDsReason(t *testing.T) {
	tid, sid := model.TraceID{1}, model.SpanID{2}
	for _, tc := range []struct {
		trace            model.TraceID
		span             model.SpanID
		tlen, slen, plen int
		want             string
	}{
		{tid, sid, 16, 8, 0, ""},
		{tid, sid, 16, 8, 8, ""},
		{tid, sid, 16, 8, 3, "parent_span_id has 3 bytes, want 8"},
		{tid, sid, 16, 4, 3, "span_id has 4 bytes, want 8"},
		{tid, sid, 15, 4, 3, "trace_id has 15 bytes, want 16"},
		{tid, sid, 0, 8, 0, "trace_id has 0 bytes, want 16"},
		{model.TraceID{}, sid, 16, 8, 3, "parent_span_id has 3 bytes, want 8"},
		{model.TraceID{}, model.SpanID{}, 16, 8, 0, "trace_id is all zeros"},
		{tid, model.SpanID{}, 16, 8, 0, "span_id is all zeros"},
	} {
		if got := spanIDsReason(tc.trace, tc.span, tc.tlen, tc.slen, tc.plen); got != tc.want {
			t.Errorf("spanIDsReason(%x, %x, %d, %d, %d) = %q, want %q", tc.trace, tc.span, tc.tlen, tc.slen, tc.plen, got, tc.want)
		}
	}
}
