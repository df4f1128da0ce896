package receiver

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConsoleIndented reads spans as the OTel Python SDK's
// ConsoleSpanExporter writes them by default (json.dumps with indent=4,
// each span over many lines; testdata/python-sdk-indented.console.log was
// written by Python's json module from python-sdk-real.console.jsonl, with
// a BOM and CRLF line ends): the same spans as the one-line form.
func TestConsoleIndented(t *testing.T) {
	_, want, wantRep := loadFile(t, "testdata/python-sdk-real.console.jsonl", ReadOptions{})
	st, got, rep := loadFile(t, "testdata/python-sdk-indented.console.log", ReadOptions{})
	if len(got) != len(want) || len(got) == 0 || rep.BadLines != 0 || rep.Skipped != wantRep.Skipped {
		t.Fatalf("%d spans, %d bad %v, %d skipped; want %d spans, 0 bad, %d skipped", len(got), rep.BadLines, rep.BadSamples, rep.Skipped, len(want), wantRep.Skipped)
	}
	stW, _, _ := loadFile(t, "testdata/python-sdk-real.console.jsonl", ReadOptions{})
	if a, b := dumpSpans(st.Interner(), snapshotSpans(st.Snapshot()), dumpOpts{times: true}), dumpSpans(stW.Interner(), snapshotSpans(stW.Snapshot()), dumpOpts{times: true}); a != b {
		t.Errorf("indented:\n%s\none-line:\n%s", a, b)
	}
	if rep.Files[0].Format != FormatConsole {
		t.Errorf("format %q", rep.Files[0].Format)
	}
}

// TestConsoleIndentedMixed mixes indented spans, an indented metrics
// record, indent=0 objects (nested braces at the start of lines), plain
// log text and a truncated last object.
func TestConsoleIndentedMixed(t *testing.T) {
	b, err := os.ReadFile("testdata/python-sdk-real.console.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var spans []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasPrefix(l, "{") {
			spans = append(spans, l)
		}
	}
	indent := func(s, pre string) string {
		var buf bytes.Buffer
		if err := json.Indent(&buf, []byte(s), "", pre); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	metrics := `{"resource_metrics": [{"resource": {"attributes": {}}, "scope_metrics": [{"metrics": [{"name": "gym.concurrency.queue_wait_duration_ms", "data": {"data_points": [{"value": 1}, {"value": 2}]}}]}]}]}`
	text := "INFO starting server\n" +
		indent(spans[0], "    ") + "\n" +
		indent(metrics, "    ") + "\n" +
		"INFO: 127.0.0.1 - \"POST /run HTTP/1.1\" 200\n" +
		indent(spans[1], "") + "\n" + // indent=0
		spans[2] + "\n" + // Gym's one-line form, the fast path
		indent(spans[3], "  ")[:200] + "\n" // cut short
	path := filepath.Join(t.TempDir(), "mixed.log")
	os.WriteFile(path, []byte(text), 0o644)
	_, got, rep := loadFile(t, path, ReadOptions{})
	if len(got) != 3 || rep.MetricPoints != 2 {
		t.Errorf("%d spans, %d metric points; want 3, 2 (bad %v)", len(got), rep.MetricPoints, rep.BadSamples)
	}
	if rep.BadLines != 1 || !strings.Contains(rep.BadSamples[0].Reason, "truncated JSON object") {
		t.Errorf("bad lines %v, want the cut object", rep.BadSamples)
	}
}
