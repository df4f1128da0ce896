package receiver

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileJSON are inputs every JSON path must refuse or read without
// crashing: nesting far past the depth bound (a recursive skip overflowed
// the stack at 4M), in the document and inside a span's attribute, and a
// line of several megabytes.
func hostileJSON() map[string][]byte {
	deep := func(n int, open, close string) string {
		return strings.Repeat(open, n) + strings.Repeat(close, n)
	}
	span := `{"name": "n", "context": {"trace_id": "0x0102030405060708090a0b0c0d0e0f10", "span_id": "0x1112131415161718"}, "kind": "SpanKind.SERVER", "start_time": "2026-11-29T18:43:51.657870Z", "attributes": {"a": %s}}`
	otlp := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","attributes":[{"key":"a","value":%s}]}]}]}]}`
	return map[string][]byte{
		"deep array 4M":         []byte(deep(4<<20, "[", "]")),
		"deep object":           []byte(deep(200000, `{"a":`, "}")),
		"deep console attr":     []byte(strings.Replace(span, "%s", deep(200000, "[", "]"), 1)),
		"deep otlp value":       []byte(strings.Replace(otlp, "%s", deep(200000, `{"arrayValue":{"values":[`, "]}}"), 1)),
		"huge console value":    []byte(strings.Replace(span, "%s", `"`+strings.Repeat("x", 5<<20)+`"`, 1)),
		"huge otlp value":       []byte(strings.Replace(otlp, "%s", `{"stringValue":"`+strings.Repeat("y", 5<<20)+`"}`, 1)),
		"unterminated deep":     []byte(strings.Repeat("[", 1<<20)),
		"python nonfinite deep": []byte(strings.Replace(span, "%s", deep(50000, "[", "NaN]"), 1)),
	}
}

// addHostile seeds a fuzz target with hostileJSON.
func addHostile(f *testing.F) {
	for _, b := range hostileJSON() {
		f.Add(b)
	}
}

// TestHostileJSONEveryPath feeds hostileJSON to every JSON reader: the
// OTLP/JSON decoder, the console decoder, and files read line by line.
func TestHostileJSONEveryPath(t *testing.T) {
	for name, b := range hostileJSON() {
		t.Run(name, func(t *testing.T) {
			_, l := newLocal()
			_, _, errJ := DecodeJSON(l, b, Limits{})
			c := newConsoleDecoder(l, Limits{})
			_, _, _, errC := c.line(b)
			c.release()
			huge := strings.HasPrefix(name, "huge")
			otlpShaped := strings.Contains(name, "otlp")
			if !huge && errJ == nil {
				t.Error("OTLP/JSON decoder accepted it")
			}
			if !huge && !otlpShaped && errC == nil {
				t.Error("console decoder accepted it")
			}
			if strings.HasPrefix(name, "deep") {
				msg := ""
				if errJ != nil {
					msg += errJ.Error()
				}
				if errC != nil {
					msg += errC.Error()
				}
				if !strings.Contains(msg, "exceeded max depth") && !strings.Contains(msg, "nested too deep") {
					t.Errorf("not refused for depth: otlp %v, console %v", errJ, errC)
				}
			}
			path := filepath.Join(t.TempDir(), "f.jsonl")
			os.WriteFile(path, append(bytes.Clone(b), '\n'), 0o644)
			_, spans, rep := loadFile(t, path, ReadOptions{})
			if huge {
				if len(spans) != 1 || rep.Decode.ValuesTruncated != 1 {
					t.Errorf("huge value: %d spans, %d truncated; want 1, 1 (%v)", len(spans), rep.Decode.ValuesTruncated, rep.BadSamples)
				}
				return
			}
			if len(spans) != 0 || rep.BadLines+rep.Skipped != 1 {
				t.Errorf("file: %d spans, %d bad, %d skipped", len(spans), rep.BadLines, rep.Skipped)
			}
		})
	}
}
