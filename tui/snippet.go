package tui

import (
	"os"
	"strings"

	osc52 "github.com/aymanbagabas/go-osc52/v2"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/nemo-gym/gymtrace/gate"
)

// SnippetFile is where copy-out writes, in the working directory.
const SnippetFile = "gymtrace-span-groups.yaml"

// Snippet is the copy-out text: the telemetry: YAML block, then the
// environment line. In a file the environment line is a comment, so the file
// stays valid YAML.
func Snippet(reg *gate.Registry, s gate.Set, file bool) string {
	// The shortest equivalent spec: it may leave out groups no Gym code emits under.
	spec := reg.Spec(s)
	if eff, err := reg.Parse(spec); err == nil {
		s = eff
	}
	env := gate.EnvLine(spec) + "\n"
	if file {
		env = "# or, in the environment:\n# " + env
	}
	return "# span groups: " + strings.Join(reg.Names(s), ", ") + "\n" + gate.TelemetryYAML(spec) + "\n" + env
}

// copySnippet writes the snippet to path and, when clip is non-nil, to the
// terminal clipboard with OSC 52 (wrapped for tmux or screen when inside one).
func copySnippet(text, path string, clip *os.File, term string) tea.Cmd {
	return func() tea.Msg {
		m := copiedMsg{path: path}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			m.errText = "could not write " + path + ": " + errText(err)
			m.path = ""
		}
		if clip != nil {
			seq := osc52.New(text)
			switch {
			case os.Getenv("TMUX") != "":
				seq = seq.Tmux()
			case strings.HasPrefix(term, "screen"):
				seq = seq.Screen()
			}
			if _, err := seq.WriteTo(clip); err == nil {
				m.clip = true
			}
		}
		return m
	}
}

// errText keeps the innermost cause of a file error: the status bar shows
// what went wrong, not a Go error chain.
func errText(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}
