package testfile

import (
	"encoding/json"
	"regexp"
	"testing"
)

var serviceNameRe = regexp.MustCompile(`"service.name","value":\{"stringValue":"([^"]*)"`)

// SplitOTLP cuts one OTLP/JSON traces request into requests of at most n
// spans each, every one with its resource and scope, as a batch span
// processor would have sent them; service is the request's service.name.
func SplitOTLP(tb testing.TB, line []byte, n int) (service string, out [][]byte) {
	tb.Helper()
	var req struct {
		ResourceSpans []struct {
			Resource   json.RawMessage `json:"resource"`
			ScopeSpans []struct {
				Scope json.RawMessage   `json:"scope"`
				Spans []json.RawMessage `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	if err := json.Unmarshal(line, &req); err != nil {
		tb.Fatal(err)
	}
	for _, rs := range req.ResourceSpans {
		if m := serviceNameRe.FindSubmatch(rs.Resource); m != nil {
			service = string(m[1])
		}
		for _, ss := range rs.ScopeSpans {
			for i := 0; i < len(ss.Spans); i += n {
				part := ss.Spans[i:min(i+n, len(ss.Spans))]
				b, err := json.Marshal(map[string]any{"resourceSpans": []any{map[string]any{
					"resource": rs.Resource, "scopeSpans": []any{map[string]any{"scope": ss.Scope, "spans": part}}}}})
				if err != nil {
					tb.Fatal(err)
				}
				out = append(out, b)
			}
		}
	}
	return service, out
}

// EarlyLate reads an OTLP/JSON capture (gzipped lines) and cuts it into
// requests of at most n spans: those of every process but caller first,
// caller's last, as real runs deliver them (gym.job and the driver's calls
// end after the rollouts they hold). spans counts the early requests' spans.
func EarlyLate(tb testing.TB, path, caller string, n int) (early, late [][]byte, spans int) {
	tb.Helper()
	for _, line := range Lines(tb, path) {
		svc, parts := SplitOTLP(tb, line, n)
		if svc == caller {
			late = append(late, parts...)
			continue
		}
		early = append(early, parts...)
		for _, p := range parts {
			spans += len(regexp.MustCompile(`"spanId"`).FindAllIndex(p, -1))
		}
	}
	return early, late, spans
}
