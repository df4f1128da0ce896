package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nemo-gym/gymtrace/gate/whatif"
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
	cfg, release, code, done := prepareOpen(args, stdout, stderr, tty)
	if done {
		return code
	}
	defer release()
	if err := runUI(cfg); err != nil {
		fmt.Fprintf(stderr, "gymtrace open: %v\n", err)
		return exitUsage
	}
	return exitOK
}

// prepareOpen is open up to the interface: the files read into a store,
// the variant and spec chosen. done says open ended there (an error, or
// the plain tree printed) with code; else release closes the store.
func prepareOpen(args []string, stdout, stderr io.Writer, tty bool) (cfg uiConfig, release func(), code int, done bool) {
	su := newSetup("open", stdout, stderr, "usage: gymtrace open [--spec S] [--groups F] [--text] FILE...\n\n"+
		"Loads captures (OTLP JSON lines, NeMo Gym console logs, binary OTLP requests;\n"+
		"the format is detected per file, - reads stdin; a case folder reads as its console/\n"+
		"or otlp/ files, any other folder as every file under it).\n\n")
	fs := su.fs
	su.settingFlags("spec", "span_groups spec to preview against")
	su.variantFlags("the capture; default: detected from the capture, else the newest")
	text := fs.Bool("text", false, "print the rollouts as a plain-text tree instead of opening the TUI")
	maxSpans := fs.Int("max-spans", 0, "keep at most this many spans, evicting the oldest rollouts (0: no bound)")
	maxLine := new(int)
	intByteSizeVar(fs, maxLine, "max-line", receiver.DefaultMaxLine, "longest line accepted, e.g. 256MiB")
	wf := addWorthFlags(fs)
	su.evidenceFlag()
	files, code, done := su.parse(args)
	if done {
		return cfg, nil, code, true
	}
	if len(files) == 0 {
		return cfg, nil, su.failUsage("no capture files given"), true
	}
	worth, err := wf.ui()
	if err != nil {
		return cfg, nil, su.fail("%v", err), true
	}
	feed, err := su.evidenceFeed(false)
	if err != nil {
		return cfg, nil, su.fail("%v", err), true
	}
	c, err := su.open(files, readOptions{
		store:   model.Options{MaxSpans: *maxSpans},
		read:    receiver.ReadOptions{MaxLine: *maxLine},
		listBad: stderr,
	})
	if err != nil {
		return cfg, nil, su.fail("%v", err), true
	}
	store, rep, snap, vc, reg := c.store, c.frep, c.snap, c.vc, c.reg
	if rep.Skipped > 0 || rep.Decode.Rejected > 0 {
		fmt.Fprintf(stderr, "read %d spans from %d file(s); skipped %d lines without spans", rep.Spans, len(rep.Files), rep.Skipped)
		if rep.Decode.Rejected > 0 {
			fmt.Fprintf(stderr, "; rejected %d invalid spans (%s)", rep.Decode.Rejected, rep.Decode.Reason)
		}
		fmt.Fprintln(stderr)
	}
	specText, specSource, _ := su.setting()
	res, err := su.applied(reg, specText, specSource)
	if err != nil {
		store.Close()
		return cfg, nil, su.fail("%v (%s)", err, vc), true
	}
	current := res.Set
	if *text || !tty {
		defer store.Close()
		if err := tui.PlainTree(stdout, whatif.NewEngine(reg).Structure(snap).Listed()); err != nil {
			return cfg, nil, su.fail("%v", err), true
		}
		return cfg, nil, exitOK, true
	}
	return uiConfig{
		Store:       store,
		Registry:    reg,
		Current:     current,
		CurrentSpec: specText,
		Variant:     vc.String(),
		Live:        false,
		Title:       "gymtrace open " + strings.Join(files, " "),
		Worth:       worth,
		Evidence:    feed,
	}, store.Close, 0, false
}
