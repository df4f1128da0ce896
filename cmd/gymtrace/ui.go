package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/term"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/tui"
)

// uiConfig is what every TUI-opening command hands runUI.
type uiConfig struct {
	Store       *model.Store
	Registry    *groups.Registry
	Current     groups.Set // the span_groups setting in force, to preview against
	CurrentSpec string
	Variant     string   // the Gym variant in use and what chose it
	Addrs       []string // receiver addresses for the header; empty for files
	Live        bool     // spans may still arrive: fresh rollouts are pending
	Title       string
	// Ctx, when set, ends the interface when it is done (SIGHUP: the
	// terminal is gone, so nothing is drawn on the way out).
	Ctx context.Context
	// Worth configures the cost and worth view and the budget row.
	Worth uiWorth
	// Redetect, when set, settles the Gym variant of a live capture from its
	// first spans; it returns the registry, spec and label to rebuild the
	// interface with (nil: keep them) and whether it has settled.
	Redetect func(*model.Snapshot) (rebuild *uiConfig, settled bool)
	// Evidence reads Gym's outcome files (--evidence), nil without.
	Evidence tui.EvidenceFunc
}

// runUI opens the interactive view and returns when the user quits, then
// prints the span_groups snippet if the user copied or changed the spec.
// When stdout is not a terminal it prints a plain summary instead.
func runUI(cfg uiConfig) error {
	if !term.IsTerminal(os.Stdout.Fd()) {
		return plainSummary(os.Stdout, cfg)
	}
	// Keys come from the terminal even when stdin is a pipe (`cat F |
	// gymtrace open -`): then the controlling terminal is opened for them.
	input := os.Stdin
	if !term.IsTerminal(os.Stdin.Fd()) {
		tty, err := os.Open("/dev/tty")
		if err != nil {
			return plainSummary(os.Stdout, cfg)
		}
		defer tty.Close()
		input = tty
	}
	if path := os.Getenv("DEBUG"); path != "" {
		f, err := tea.LogToFile(path, "gymtrace")
		if err != nil {
			return fmt.Errorf("open debug log: %w", err)
		}
		defer f.Close()
	}
	m := tui.New(tuiOptions(cfg))
	p := tea.NewProgram(m, tea.WithInput(input), tea.WithAltScreen(), tea.WithMouseCellMotion())
	if cfg.Ctx != nil {
		ended := make(chan struct{})
		defer close(ended)
		go func() {
			select {
			case <-cfg.Ctx.Done():
				p.Kill()
			case <-ended:
			}
		}()
	}
	final, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && cfg.Ctx != nil && cfg.Ctx.Err() != nil {
		return nil // ended by a signal: the caller stops and flushes
	}
	if err != nil {
		return fmt.Errorf("run terminal interface: %w", err)
	}
	if fm, ok := final.(tui.Model); ok {
		if s := fm.Snippet(); s != "" {
			fmt.Fprint(os.Stdout, s)
		}
	}
	return nil
}

// tuiOptions are the interface's options for cfg: copy-out and exports in
// the working directory, the clipboard on a terminal's stderr.
func tuiOptions(cfg uiConfig) tui.Options {
	if cfg.Registry == nil {
		cfg.Registry = groups.Default()
	}
	snippet, exportDir := tui.SnippetFile, ""
	if wd, err := os.Getwd(); err == nil {
		snippet, exportDir = filepath.Join(wd, tui.SnippetFile), wd
	}
	var clip *os.File
	if term.IsTerminal(os.Stderr.Fd()) && os.Getenv("TERM") != "dumb" {
		clip = os.Stderr
	}
	opts := tui.Options{
		Source:      cfg.Store,
		Registry:    cfg.Registry,
		Current:     cfg.Current,
		CurrentSpec: cfg.CurrentSpec,
		Variant:     cfg.Variant,
		Addrs:       cfg.Addrs,
		Live:        cfg.Live,
		Title:       cfg.Title,
		SnippetPath: snippet,
		Clipboard:   clip,
		Export:      tuiExport,
		ExportDir:   exportDir,
		SpanCost:    cfg.Worth.SpanCost,
		Budget:      cfg.Worth.Budget,
		RolloutRate: cfg.Worth.Rate,
		Evidence:    cfg.Evidence,
	}
	if cfg.Redetect != nil {
		base := opts
		opts.Redetect = func(s *model.Snapshot) (*tui.Options, bool) {
			nc, settled := cfg.Redetect(s)
			if nc == nil {
				return nil, settled
			}
			o := base
			o.Registry, o.Current, o.CurrentSpec, o.Variant = nc.Registry, nc.Current, nc.CurrentSpec, nc.Variant
			return &o, settled
		}
	}
	return opts
}

// tuiExport writes what the TUI's x exports, as gymtrace export does.
func tuiExport(path string, in *model.Interner, spans model.Batch) error {
	return writeExport(path, nil, in, spans)
}

// plainSummary is the headless fallback: counts, one line per rollout.
func plainSummary(w io.Writer, cfg uiConfig) error {
	cfg.Store.Sync()
	s := cfg.Store.Snapshot()
	fmt.Fprintf(w, "spans=%d rollouts=%d traces=%d\n", s.Stats.Stored, s.Stats.Rollouts, s.Stats.Traces)
	for _, r := range s.Rollouts {
		fmt.Fprintf(w, "%s spans=%d traces=%d errors=%d\n", r.ID, r.Spans, r.Traces, r.Errors)
	}
	return nil
}
