package tui

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	osc52 "github.com/aymanbagabas/go-osc52/v2"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/nemo-gym/gymtrace/gate/groups"
)

// SnippetFile is where copy-out writes, in the working directory.
const SnippetFile = "gymtrace-span-groups.yaml"

// Snippet is the copy-out text: the telemetry: YAML block, then the
// environment line. In a file the environment line is a comment, so the file
// stays valid YAML. It refuses (an error for the status bar) a set the
// registry's Gym variant would reject or apply otherwise, and the empty set.
// warn, when set, heads the text as a comment: a spec that breaks joins is
// still handed out (the user may want exactly that), but never silently.
func Snippet(reg *groups.Registry, s groups.Set, file bool, warn string) (string, error) {
	// The shortest equivalent spec: it may leave out groups no Gym code emits under.
	spec, err := reg.CopyOut(s)
	if err != nil {
		return "", err
	}
	if eff := reg.Resolve(spec); !eff.Off {
		s = eff.Set
	}
	env := groups.EnvLine(spec) + "\n"
	if file {
		env = "# or, in the environment:\n# " + env
	}
	head := ""
	if warn != "" {
		head = "# warning: " + warn + "\n"
	}
	return head + "# span groups: " + strings.Join(reg.Names(s), ", ") + "\n" + groups.TelemetryYAML(spec) + "\n" + env, nil
}

// copySnippet writes the snippet to path and, when clip is non-nil, sends
// it to the terminal clipboard as a plain OSC 52 sequence. Plain, because
// tmux with set-clipboard on takes OSC 52 from a program and forwards it to
// the terminal, while a DCS passthrough wrapper is dropped unless
// allow-passthrough is on. A file there already that
// this run did not write is kept as path.bak, and the status says so.
func copySnippet(text, path, wrote string, clip *os.File, warn string) tea.Cmd {
	return func() tea.Msg {
		m := copiedMsg{path: path, warn: warn}
		if old, err := os.ReadFile(path); err == nil && path != wrote && string(old) != text {
			if err := os.Rename(path, path+".bak"); err != nil {
				m.errText = "did not replace " + path + ": " + errText(err)
				m.path = ""
			} else {
				m.replaced = true
			}
		}
		if m.path != "" {
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				m.errText = "could not write " + path + ": " + errText(err)
				m.path = ""
			}
		}
		switch {
		case clip == nil:
			m.clipText = "clipboard not set (no terminal)"
		default:
			if _, err := osc52.New(text).WriteTo(clip); err != nil {
				m.clipText = "clipboard not set (" + errText(err) + ")"
				break
			}
			m.clip = true
			m.clipText = "sent to the clipboard by OSC 52 (if the terminal allows it)"
			if os.Getenv("TMUX") != "" {
				m.clipText, m.clip = tmuxClipboard()
			}
		}
		return m
	}
}

// tmuxClipboard says what tmux does with the OSC 52 just sent, from its
// set-clipboard option, and whether the clipboard can have been set.
func tmuxClipboard() (string, bool) {
	out, err := exec.Command("tmux", "show-options", "-gv", "set-clipboard").Output()
	switch v := strings.TrimSpace(string(out)); {
	case err != nil:
		return "sent to tmux by OSC 52 (set-clipboard unknown)", true
	case v == "off" || v == "external":
		// external: tmux sets the clipboard from its copy mode only.
		return "clipboard not set (tmux set-clipboard " + v + "; set it on)", false
	default:
		return "copied: sent to tmux and the terminal clipboard", true
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

func (m Model) setCopied(msg copiedMsg) Model {
	m.copied = true
	if msg.errText != "" && msg.path == "" && !msg.clip {
		m.status, m.statusErr = msg.errText, true
		return m
	}
	// What happened first (the clipboard's fate, never "copied" when it
	// was not); the env line, long and printed on exit anyway, last, where
	// the width cuts it.
	parts := []string{msg.clipText}
	if msg.warn != "" {
		// A spec that breaks joins is said first, where no width cuts it.
		parts = append([]string{glyphSplit + " " + msg.warn}, parts...)
	}
	if msg.path != "" {
		m.wrote = msg.path
		shown := msg.path
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(wd, msg.path); err == nil && !strings.HasPrefix(rel, "..") {
				shown = rel
			}
		}
		if msg.replaced {
			parts = append(parts, "replaced the earlier "+shown+" (kept as "+shown+".bak)")
		} else {
			parts = append(parts, "wrote "+shown)
		}
	}
	if msg.errText != "" {
		parts = append(parts, msg.errText)
	}
	spec, _ := m.reg.CopyOut(m.groups.Preview())
	parts = append(parts, groups.EnvLine(spec))
	m.status, m.statusErr = strings.Join(parts, " · "), msg.errText != "" || msg.warn != ""
	return m
}
