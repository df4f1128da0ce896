package tui

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// ExportFunc writes spans with their trace ids (resolved through in) to path
// as OTLP/JSON lines.
// The TUI does not know OTLP: the command that opens it supplies this.
type ExportFunc func(path string, in *model.Interner, spans model.Batch) error

// exportedMsg reports a finished export of one rollout.
type exportedMsg struct {
	path  string
	spans int
	err   error
}

// exportPath is where the export of rollout id goes: a file in dir named
// after the rollout (and the spec, when shaped by one), safe as a name.
func exportPath(dir, id, spec string) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
				return r
			}
			return '_'
		}, s)
	}
	name := "gymtrace-" + strings.Trim(clean(id), "_.")
	if spec != "" {
		name += "-" + clean(spec)
	}
	return filepath.Join(dir, name+".jsonl")
}

// exportRollout writes r as captured, or shaped by spec when it is set, on
// a command's goroutine with an engine of its own.
func exportRollout(fn ExportFunc, reg *groups.Registry, snap *model.Snapshot, r *model.Rollout, spec *groups.Set, path string) tea.Cmd {
	return func() tea.Msg {
		spans := whatif.NewEngine(reg).ExportSpans(snap, []*model.Rollout{r}, spec)
		return exportedMsg{path: path, spans: len(spans.Spans), err: fn(path, snap.Interner(), spans)}
	}
}

// startExport handles x (as captured) and X (as under the previewed spec).
func (m *Model) startExport(shaped bool) tea.Cmd {
	r := m.trace.Rollout()
	switch {
	case m.opts.Export == nil:
		m.status, m.statusErr = "export is not available here", true
		return nil
	case r == nil || m.snap == nil:
		m.status, m.statusErr = "no rollout selected to export", true
		return nil
	}
	var spec *groups.Set
	specName := ""
	if shaped {
		s := m.groups.Preview()
		spec, specName = &s, m.reg.Format(s)
	}
	m.status = "exporting " + r.ID + "…"
	return exportRollout(m.opts.Export, m.reg, m.snap, r, spec, exportPath(m.opts.ExportDir, r.ID, specName))
}

func (m Model) setExported(msg exportedMsg) Model {
	if msg.err != nil {
		// The cause, not the Go error chain: the path is in the message.
		reason := msg.err
		var pe *fs.PathError
		if errors.As(reason, &pe) {
			reason = pe.Err
		}
		m.status, m.statusErr = fmt.Sprintf("export failed: %v", reason), true
		return m
	}
	m.status, m.statusErr = fmt.Sprintf("exported %s to %s", countNoun(msg.spans, "span"), msg.path), false
	return m
}
