package tui

import (
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// Glyphs carry every state on screen, so it survives NO_COLOR and any width.
// Each has one meaning everywhere; the help screen's legend lists them.
const (
	glyphError     = "!" // a span with error status; a rollout's error spans
	glyphSplit     = "✗" // a join break: split rollout, broken hop, new trace
	glyphJoined    = "✓"
	glyphPending   = "…"
	glyphTruncated = "⋯" // force-closed at shutdown
	glyphFolded    = "⊞" // a collapsed node, +N the spans it hides
	glyphMatch     = "•" // a search hit
	glyphEvent     = '◆' // a span event, on its bar
	glyphMarked    = "★" // the rollout marked for comparison
	glyphLeak      = "↪" // a context leak: a request span carried over onto another request's
)

// Styles holds every style the interface uses. Panels receive it and never
// create colours of their own, so NO_COLOR and the colour profile are decided
// in one place: the renderer DefaultStyles is built from.
type Styles struct {
	// Color is false under NO_COLOR (an ASCII profile): what colour tells
	// (a span's process) must then be said by the columns and glyphs.
	Color bool
	App   struct {
		Title  lipgloss.Style
		Header lipgloss.Style
		Dim    lipgloss.Style
		Status lipgloss.Style
		Error  lipgloss.Style
		Help   lipgloss.Style
	}
	Panel struct {
		Box     lipgloss.Style // unfocused panel frame
		Focused lipgloss.Style // focused panel frame
		Title   lipgloss.Style
		Column  lipgloss.Style // column headers
	}
	List struct {
		Selected lipgloss.Style
		Normal   lipgloss.Style
		Dim      lipgloss.Style
	}
	Join struct {
		Joined  lipgloss.Style
		Split   lipgloss.Style
		Pending lipgloss.Style
	}
	Tree struct {
		Glyph     lipgloss.Style
		Bar       lipgloss.Style
		ErrorBar  lipgloss.Style
		Error     lipgloss.Style
		Truncated lipgloss.Style
		Group     lipgloss.Style
		Cut       lipgloss.Style
		Dropped   lipgloss.Style
		Fragment  lipgloss.Style
		Match     lipgloss.Style
		Leak      lipgloss.Style // a context leak's marks
		Path      lipgloss.Style // the critical path's marks and summary
		Tick      lipgloss.Style
	}
	// Services colours service names and bars, cycled by resource id.
	Services []lipgloss.Style
	Groups   struct {
		On      lipgloss.Style
		Off     lipgloss.Style
		Note    lipgloss.Style
		Changed lipgloss.Style
	}
	Input struct {
		Prompt lipgloss.Style
		Error  lipgloss.Style
	}
}

// DefaultStyles builds the styles from an adaptive palette with renderer r;
// nil means lipgloss's default renderer (stdout's colour profile, which
// honours NO_COLOR).
func DefaultStyles(r *lipgloss.Renderer) *Styles {
	if r == nil {
		r = lipgloss.DefaultRenderer()
	}
	var (
		accent = lipgloss.AdaptiveColor{Light: "#5A56E0", Dark: "#7D79F6"}
		subtle = lipgloss.AdaptiveColor{Light: "#9B9B9B", Dark: "#5C5C5C"}
		text   = lipgloss.AdaptiveColor{Light: "#1A1A1A", Dark: "#DDDDDD"}
		good   = lipgloss.AdaptiveColor{Light: "#1F7A1F", Dark: "#5FD75F"}
		bad    = lipgloss.AdaptiveColor{Light: "#C0152F", Dark: "#FF5F5F"}
		warn   = lipgloss.AdaptiveColor{Light: "#A66300", Dark: "#FFAF00"}
		selBg  = lipgloss.AdaptiveColor{Light: "#DCDAFB", Dark: "#3A3870"}
	)
	s := &Styles{Color: r.ColorProfile() != termenv.Ascii}
	s.App.Title = r.NewStyle().Bold(true).Foreground(accent)
	s.App.Header = r.NewStyle().Foreground(text)
	s.App.Dim = r.NewStyle().Foreground(subtle)
	s.App.Status = r.NewStyle().Foreground(good)
	s.App.Error = r.NewStyle().Foreground(bad)
	s.App.Help = r.NewStyle().Foreground(subtle)

	s.Panel.Box = r.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(subtle)
	s.Panel.Focused = r.NewStyle().Border(lipgloss.ThickBorder()).BorderForeground(accent)
	s.Panel.Title = r.NewStyle().Bold(true).Foreground(accent)
	s.Panel.Column = r.NewStyle().Foreground(subtle)

	s.List.Selected = r.NewStyle().Background(selBg).Bold(true)
	s.List.Normal = r.NewStyle()
	s.List.Dim = r.NewStyle().Foreground(subtle)

	s.Join.Joined = r.NewStyle().Foreground(good)
	s.Join.Split = r.NewStyle().Foreground(bad).Bold(true)
	s.Join.Pending = r.NewStyle().Foreground(warn)

	s.Tree.Glyph = r.NewStyle().Foreground(subtle)
	s.Tree.Bar = r.NewStyle()
	s.Tree.ErrorBar = r.NewStyle().Foreground(bad)
	s.Tree.Error = r.NewStyle().Foreground(bad).Bold(true)
	s.Tree.Truncated = r.NewStyle().Foreground(warn)
	s.Tree.Group = r.NewStyle().Foreground(subtle).Italic(true)
	s.Tree.Cut = r.NewStyle().Foreground(bad).Bold(true)
	s.Tree.Dropped = r.NewStyle().Foreground(subtle).Strikethrough(true)
	s.Tree.Fragment = r.NewStyle().Foreground(warn).Bold(true)
	s.Tree.Match = r.NewStyle().Foreground(accent).Bold(true)
	s.Tree.Leak = r.NewStyle().Foreground(warn).Bold(true)
	s.Tree.Tick = r.NewStyle().Foreground(subtle)
	s.Tree.Path = r.NewStyle().Foreground(lipgloss.AdaptiveColor{Light: "#AF8700", Dark: "#FFD75F"}).Bold(true)

	for _, c := range []lipgloss.AdaptiveColor{
		{Light: "#0066CC", Dark: "#5FAFFF"},
		{Light: "#8A2BE2", Dark: "#D787FF"},
		{Light: "#008787", Dark: "#5FD7D7"},
		{Light: "#AF5F00", Dark: "#FFAF5F"},
		{Light: "#5F8700", Dark: "#AFD75F"},
		{Light: "#AF005F", Dark: "#FF87AF"},
	} {
		s.Services = append(s.Services, r.NewStyle().Foreground(c))
	}

	s.Groups.On = r.NewStyle().Foreground(good)
	s.Groups.Off = r.NewStyle().Foreground(subtle)
	s.Groups.Note = r.NewStyle().Foreground(warn).Italic(true)
	s.Groups.Changed = r.NewStyle().Foreground(warn).Bold(true)

	s.Input.Prompt = r.NewStyle().Foreground(accent).Bold(true)
	s.Input.Error = r.NewStyle().Foreground(bad)
	return s
}

// fills are the bar glyphs of the services without colour, cycled by
// resource id like the colours; with colour every bar is solid. ▓ is not
// one: it marks the critical path.
var fills = []rune{'█', '▒', '░', '▚', '▞', '▌'}

// Fill is the glyph a resource's bars are drawn with.
func (s *Styles) Fill(id uint32) rune {
	if s.Color {
		return '█'
	}
	return fills[int(id)%len(fills)]
}

// Service returns the style for a resource, stable per resource id.
func (s *Styles) Service(id uint32) lipgloss.Style {
	if len(s.Services) == 0 {
		return lipgloss.NewStyle()
	}
	return s.Services[int(id)%len(s.Services)]
}
