package tui

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"
	"go.opentelemetry.io/otel/trace"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gymsim"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// The waterfall's title shows a rollout's token usage when its spans
// report any (the simulated fleet with a GenAI gateway over vLLM, read
// from its console lines), and nothing of the kind for Gym alone.
func TestTraceTitleTokens(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := gymsim.Start(ctx, gymsim.Config{Seed: 5, Spec: "all", Rollouts: 3, Concurrency: 2, Protocol: "console", Console: &out, RecordTruth: true,
		ModelBackend: gymsim.BackendGateway, BatchTimeout: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f.Wait()
	if err := f.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fleet.log")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	st := model.NewStore(model.Options{})
	t.Cleanup(st.Close)
	if _, err := receiver.ReadFiles(st, []string{path}, receiver.ReadOptions{}); err != nil {
		t.Fatal(err)
	}
	st.Sync()
	v, _ := groups.DetectVariant(st.Snapshot())
	reg := v.Registry()
	cur, err := reg.Parse("all")
	if err != nil {
		t.Fatal(err)
	}
	m := New(Options{Source: st, Registry: reg, Current: cur, CurrentSpec: "all", Title: "fleet",
		SnippetPath: filepath.Join(t.TempDir(), SnippetFile)})
	m.refresh = time.Nanosecond
	m = send(t, m, tea.WindowSizeMsg{Width: 160, Height: 40})
	m = run(t, m, m.Init())
	title := ansi.Strip(strings.Split(m.trace.view(), "\n")[0])
	re := regexp.MustCompile(`tokens (\d[\d,]*) in / (\d[\d,]*) out`)
	g := re.FindStringSubmatch(title)
	if g == nil {
		t.Fatalf("title without tokens: %q", title)
	}
	want := m.trace.tokens.t
	if !want.Present() || g[1] != fmtCount(want.Input) || g[2] != fmtCount(want.Output) {
		t.Fatalf("title %q, the rollout's tokens %+v", title, want)
	}
	// The fleet's own record of what the shown rollout's calls used.
	shown := m.trace.Rollout().Fragments[0].Spans[0].SpanID
	idx := -2
	for _, s := range f.Truth() {
		if s.SpanID == trace.SpanID(shown) {
			idx = s.Rollout
		}
	}
	if u := f.Tokens()[idx]; u.Input != want.Input || u.Output != want.Output || u.Calls != want.Calls {
		t.Fatalf("rollout %d: shown %+v, the backend answered %+v", idx, want, u)
	}

	plain := realModel(t, "s41-obs0-iso/all", 160, 40, "all")
	if title := ansi.Strip(strings.Split(plain.trace.view(), "\n")[0]); strings.Contains(title, "tokens") {
		t.Fatalf("Gym alone, title %q", title)
	}
}
