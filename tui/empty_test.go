package tui

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"github.com/nemo-gym/gymtrace/internal/golden"
)

// TestEmptyLive is what serve shows before the first span: where spans are
// received and the lines that point NeMo Gym at it, whole at 80 columns,
// and no verdict about rollouts that do not exist yet.
func TestEmptyLive(t *testing.T) {
	for _, tc := range []struct {
		name  string
		w, h  int
		addrs []string
		want  []string
	}{
		{"both-80x24", 80, 24, []string{"grpc 127.0.0.1:4317", "http 127.0.0.1:4318"},
			[]string{"waiting for spans on grpc 127.0.0.1:4317 · http 127.0.0.1:4318", "export NEMO_GYM_OTEL_EXPORTER=otlp", "export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4317"}},
		{"all-interfaces-120x40", 120, 40, []string{"grpc 0.0.0.0:4317", "http [::]:4318"},
			[]string{"export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4317", "or OTLP/HTTP: OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf, port 4318"}},
		{"http-only-80x24", 80, 24, []string{"http 127.0.0.1:4318"},
			[]string{"export OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "export OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t)
			reg := testRegistry()
			cur, _ := reg.Parse("default")
			m := New(Options{Source: b.st, Registry: reg, Current: cur, CurrentSpec: "default", Title: "gymtrace serve",
				Addrs: tc.addrs, Live: true, SnippetPath: filepath.Join(t.TempDir(), SnippetFile), Now: func() time.Time { return t0 }})
			m.refresh = time.Nanosecond
			m = send(t, m, tea.WindowSizeMsg{Width: tc.w, Height: tc.h})
			m = run(t, m, m.Init())
			got := m.View()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("screen lacks %q:\n%s", w, got)
				}
			}
			if strings.Contains(got, "intact 0/0") || strings.Contains(got, "✓") {
				t.Errorf("an empty capture gets a verdict:\n%s", got)
			}
			for i, l := range strings.Split(got, "\n") {
				if ansi.StringWidth(l) > tc.w {
					t.Errorf("line %d is %d wide", i, ansi.StringWidth(l))
				}
			}
			golden.Check(t, []byte(got))
		})
	}
}
