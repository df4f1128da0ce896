package main

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The Collector's otlpjsonfile receiver and otel-tui's --from-json-file
// decode each line with pdata's JSON unmarshaler: the export must decode
// there to the same spans, ids and parents.
func TestExportReadByCollector(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.jsonl")
	files := realGymCase(t, "s41-obs1-iso/all")
	if code, _, errOut := runGateCmd(t, exportCmd, append([]string{"--spec", "per_rollout", "-o", out}, files...)...); code != exitOK {
		t.Fatalf("export exit %d: %s", code, errOut)
	}
	st, snap, _, err := loadCaptures([]string{out})
	defer st.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{} // span id -> parent id
	for _, r := range snap.Rollouts {
		for _, f := range r.Fragments {
			for i := range f.Spans {
				want[f.Spans[i].SpanID.String()] = f.ParentID(i).String()
			}
		}
	}
	fh, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 16<<20)
	var um ptrace.JSONUnmarshaler
	got, line := 0, 0
	for sc.Scan() {
		line++
		td, err := um.UnmarshalTraces(sc.Bytes())
		if err != nil {
			t.Fatalf("%s:%d: pdata: %v", out, line, err)
		}
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			if _, ok := rs.Resource().Attributes().Get("service.name"); !ok {
				t.Errorf("%s:%d: a resource without service.name", out, line)
			}
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				spans := rs.ScopeSpans().At(j).Spans()
				for k := 0; k < spans.Len(); k++ {
					sp := spans.At(k)
					got++
					id := sp.SpanID().String()
					parent, ok := want[id]
					if !ok {
						t.Errorf("pdata reads span %s %q that gymtrace does not", id, sp.Name())
					} else if p := sp.ParentSpanID(); (p.IsEmpty() && parent != "0000000000000000") || (!p.IsEmpty() && p.String() != parent) {
						t.Errorf("span %s: pdata parent %s, gymtrace %s", id, p, parent)
					}
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if got != len(want) || got == 0 {
		t.Errorf("pdata reads %d spans, gymtrace %d", got, len(want))
	}
}
