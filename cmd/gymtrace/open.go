package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nemo-gym/gymtrace/gate"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
	"github.com/nemo-gym/gymtrace/tui"
)

func cmdOpen(args []string) int {
	return runOpen(args, os.Stdout, os.Stderr, isTerminal(os.Stdout))
}

// isTerminal reports whether f is a character device (a terminal), so that
// piped or redirected output gets plain text instead of the TUI.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// runOpen loads the files named in args and shows them: the TUI on a
// terminal, the plain tree otherwise or with --text.
func runOpen(args []string, stdout, stderr io.Writer, tty bool) int {
	fs := flag.NewFlagSet("open", flag.ContinueOnError)
	fs.SetOutput(stderr)
	spec := fs.String("spec", "", "span_groups spec to preview against (default $NEMO_GYM_OTEL_SPAN_GROUPS, else $NEMO_LENS_SPAN_GROUPS, else default)")
	groups := fs.String("groups", "", "groups file adding span groups, presets and rules")
	gymVersion := gymVersionFlag(fs)
	text := fs.Bool("text", false, "print the rollouts as a plain-text tree instead of opening the TUI")
	maxSpans := fs.Int("max-spans", 0, "keep at most this many spans, evicting the oldest rollouts (0: no bound)")
	maxLine := fs.Int("max-line", receiver.DefaultMaxLine, "longest line accepted, in bytes")
	wf := addWorthFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: gymtrace open [--spec S] [--groups F] [--text] FILE...\n\n"+
			"Loads captures (OTLP JSON lines, NeMo Gym console logs, binary OTLP requests;\n"+
			"the format is detected per file, - reads stdin).\n\n")
		fs.PrintDefaults()
	}
	files, err := parseInterleaved(fs, args) // flags before, between or after the files, as every command
	if err != nil {
		return exitUsage
	}
	worth, err := wf.ui()
	if err != nil {
		fmt.Fprintf(stderr, "gymtrace open: %v\n", err)
		return exitUsage
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "gymtrace open: no files given")
		fs.Usage()
		return exitUsage
	}
	if _, _, err := pinnedVariant(*gymVersion); err != nil {
		fmt.Fprintf(stderr, "gymtrace open: %v\n", err)
		return exitUsage
	}
	specText, specSource, err := gate.FindSpec(*spec, os.Getenv, "")
	if err != nil {
		fmt.Fprintf(stderr, "gymtrace open: %v\n", err)
		return exitUsage
	}

	store := model.NewStore(model.Options{MaxSpans: *maxSpans})
	defer store.Close()
	rep, readErr := receiver.ReadFiles(store, files, receiver.ReadOptions{MaxLine: *maxLine})
	store.Sync()
	for _, b := range rep.BadSamples {
		fmt.Fprintln(stderr, b)
	}
	if more := rep.BadLines - len(rep.BadSamples); more > 0 {
		fmt.Fprintf(stderr, "… and %d more bad lines\n", more)
	}
	if readErr != nil {
		fmt.Fprintf(stderr, "gymtrace open: %v\n", readErr)
		return exitUsage
	}
	if rep.Spans == 0 {
		fmt.Fprintf(stderr, "gymtrace open: no spans found in %s\n", strings.Join(files, ", "))
		return exitUsage
	}
	if rep.Skipped > 0 || rep.Decode.Rejected > 0 {
		fmt.Fprintf(stderr, "read %d spans from %d file(s); skipped %d lines without spans", rep.Spans, len(rep.Files), rep.Skipped)
		if rep.Decode.Rejected > 0 {
			fmt.Fprintf(stderr, "; rejected %d invalid spans (%s)", rep.Decode.Rejected, rep.Decode.Reason)
		}
		fmt.Fprintln(stderr)
	}

	snap := store.Snapshot()
	vc, err := chooseVariant(*gymVersion, snap)
	if err != nil {
		fmt.Fprintf(stderr, "gymtrace open: %v\n", err)
		return exitUsage
	}
	reg, err := loadRegistry(vc, *groups)
	if err != nil {
		fmt.Fprintf(stderr, "gymtrace open: %v\n", err)
		return exitUsage
	}
	current, err := currentSet(reg, specText, specSource, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "gymtrace open: %v (%s)\n", err, vc)
		return exitUsage
	}
	if *text || !tty {
		if err := tui.PlainTree(stdout, gate.NewEngine(reg).Structure(snap).Listed()); err != nil {
			fmt.Fprintf(stderr, "gymtrace open: %v\n", err)
			return exitUsage
		}
		return exitOK
	}
	err = runUI(uiConfig{
		Store:       store,
		Registry:    reg,
		Current:     current,
		CurrentSpec: specText,
		Variant:     vc.String(),
		Live:        false,
		Title:       "gymtrace open " + strings.Join(files, " "),
		Worth:       worth,
	})
	if err != nil {
		fmt.Fprintf(stderr, "gymtrace open: %v\n", err)
		return exitUsage
	}
	return exitOK
}
