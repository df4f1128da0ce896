package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// setup is what every command shares: its flag set, parsed so that flags
// may come before, between or after the arguments; the flags naming the Gym
// variant, the groups file and the span_groups setting; and one wording for
// problems: "gymtrace CMD: …" on stderr, exit 2 for bad input or usage.
type setup struct {
	name   string
	fs     *flag.FlagSet
	stdout io.Writer // where help asked for (-h) goes
	stderr io.Writer
	head   string // the usage text above the flags

	gymVersion, groups *string
	spec, gymConfig    *string
	specFlag           string   // the flag holding the setting, "" when none
	evidence           []string // --evidence paths, when the command takes them
}

func newSetup(name string, stdout, stderr io.Writer, head string) *setup {
	s := &setup{name: name, stdout: stdout, stderr: stderr, head: head}
	s.fs = flag.NewFlagSet(name, flag.ContinueOnError)
	s.fs.SetOutput(stderr)
	s.fs.Usage = s.usage
	return s
}

func (s *setup) usage() {
	fmt.Fprint(s.stderr, s.head)
	s.fs.PrintDefaults()
}

// help prints the usage asked for (-h) on stdout, where a pager reads it.
func (s *setup) help() {
	fmt.Fprint(s.stdout, s.head)
	s.fs.SetOutput(s.stdout)
	s.fs.PrintDefaults()
	s.fs.SetOutput(s.stderr)
}

// fail reports a usage problem and returns the exit code for it.
func (s *setup) fail(format string, a ...any) int {
	fmt.Fprintf(s.stderr, "gymtrace "+s.name+": "+format+"\n", a...)
	return exitUsage
}

// failUsage is fail after the usage text, for a line that cannot run.
func (s *setup) failUsage(format string, a ...any) int {
	s.usage()
	return s.fail(format, a...)
}

// warn reports something the command goes on after.
func (s *setup) warn(format string, a ...any) {
	fmt.Fprintf(s.stderr, "gymtrace "+s.name+": "+format+"\n", a...)
}

// variantFlags adds --gym-version and --groups, which every command that
// reads specs takes. what names the capture the variant is told from.
func (s *setup) variantFlags(what string) {
	s.gymVersion = s.fs.String("gym-version", "", "the Gym telemetry variant ("+strings.Join(groups.VariantNames(), ", ")+
		") or Gym version of "+what)
	s.groups = s.fs.String("groups", "", "groups file adding span groups, presets and rules")
}

// settingFlags adds the flag holding the span_groups setting in force and
// --gym-config, found as Gym finds its setting (see setting).
func (s *setup) settingFlags(flagName, what string) {
	s.specFlag = flagName
	s.spec = s.fs.String(flagName, "", what+" (default $"+groups.EnvSpanGroups+", else --gym-config, else $"+groups.EnvLensSpanGroups+", else default)")
	s.gymConfig = s.fs.String("gym-config", "", "Gym config YAML to read telemetry.span_groups from")
}

// parse parses args with flags anywhere in the line and returns the other
// arguments. done is set when the command must stop with code: -h (exit 0,
// after the usage on stdout) or a bad flag (exit 2, the usage on stderr).
func (s *setup) parse(args []string) (pos []string, code int, done bool) {
	// The flag package's own report lacks the command; it is silenced and
	// reworded.
	s.fs.SetOutput(io.Discard)
	s.fs.Usage = func() {}
	pos, err := parseInterleaved(s.fs, args)
	s.fs.SetOutput(s.stderr)
	s.fs.Usage = s.usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		s.help()
		return nil, exitOK, true
	case err != nil:
		return nil, s.failUsage("%v", err), true
	}
	return pos, exitOK, false
}

// parseNoArgs is parse for a command that takes flags only.
func (s *setup) parseNoArgs(args []string) (code int, done bool) {
	pos, code, done := s.parse(args)
	if !done && len(pos) > 0 {
		return s.failUsage("unexpected argument %q", pos[0]), true
	}
	return code, done
}

// parseInterleaved parses flags given before, between or after the
// arguments, so `preview FILE --json` works as well as `preview --json
// FILE`; everything after "--" is an argument.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// checkFlags validates --gym-version and reads --gym-config before any
// capture is read, so a bad line fails fast.
func (s *setup) checkFlags() error {
	if s.gymVersion != nil {
		if _, _, err := pinnedVariant(*s.gymVersion); err != nil {
			return err
		}
	}
	if s.spec != nil {
		if _, _, err := s.setting(); err != nil {
			return err
		}
	}
	return nil
}

// setting is the span_groups setting in force and where it came from:
// the setting flag, else $NEMO_GYM_OTEL_SPAN_GROUPS, else --gym-config's
// telemetry.span_groups, else $NEMO_LENS_SPAN_GROUPS, else default (Gym's
// own order; groups.FindSpec).
func (s *setup) setting() (spec, source string, err error) {
	spec, source, err = groups.FindSpec(*s.spec, os.Getenv, *s.gymConfig)
	if source == groups.SourceFlag {
		source = "--" + s.specFlag
	}
	return spec, source, err
}

// applied resolves a spec the command works under as the variant does: a
// spec Gym refuses (telemetry off), or one that leaves no group on, gives
// nothing to work with and is an error; names Gym drops are warned about
// and the rest applies.
func (s *setup) applied(reg *groups.Registry, spec, source string) (groups.Resolution, error) {
	res, warning, err := report.Applied(reg, spec, source)
	if warning != "" {
		s.warn("%s", warning)
	}
	return res, err
}

// appliedFlag is applied for an optional what-if spec flag: ok is false
// when the flag was not given.
func (s *setup) appliedFlag(reg *groups.Registry, spec, flagName string) (set groups.Set, ok bool, err error) {
	if strings.TrimSpace(spec) == "" {
		return 0, false, nil
	}
	res, err := s.applied(reg, spec, "--"+flagName)
	return res.Set, err == nil, err
}

// registry is the variant and registry for a command with no capture to
// tell the variant from: --gym-version, else the newest.
func (s *setup) registry(newestWhy string) (variantChoice, *groups.Registry, error) {
	vc, pinned, err := pinnedVariant(*s.gymVersion)
	if err != nil {
		return vc, nil, err
	}
	if !pinned {
		vc = variantChoice{groups.Newest(), newestWhy}
	}
	reg, err := loadRegistry(vc, *s.groups)
	return vc, reg, err
}

// captures is what every command that reads capture files starts from: the
// loaded store, what reading reported, and the Gym variant and registry the
// capture's specs are read with.
type captures struct {
	store *model.Store
	snap  *model.Snapshot
	frep  receiver.FileReport
	vc    variantChoice
	reg   *groups.Registry
}

// readOptions bound what reading captures keeps.
type readOptions struct {
	store model.Options
	read  receiver.ReadOptions
	// listBad, when set, gets the bad lines' samples and the count of the
	// rest, as soon as the files are read.
	listBad io.Writer
}

// open checks the flags before reading anything, reads files, then picks
// the variant (--gym-version, else what the capture shows) and its
// registry, extended by --groups. On error nothing is left open.
func (s *setup) open(files []string, o readOptions) (*captures, error) {
	if err := s.checkFlags(); err != nil {
		return nil, err
	}
	store, snap, frep, err := loadCapturesWith(files, o)
	if err == nil {
		c := &captures{store: store, snap: snap, frep: frep}
		if c.vc, err = chooseVariant(*s.gymVersion, snap); err == nil {
			if c.reg, err = loadRegistry(c.vc, *s.groups); err == nil {
				return c, nil
			}
		}
	}
	store.Close()
	return nil, err
}

// loadCaptures reads files into a new store and returns its snapshot.
func loadCaptures(files []string) (*model.Store, *model.Snapshot, receiver.FileReport, error) {
	return loadCapturesWith(files, readOptions{})
}

// loadCapturesWith reads files into a new store and returns its snapshot;
// a folder is read as captureFiles reads it. Files are complete, so
// everything is applied before the snapshot is taken.
func loadCapturesWith(files []string, o readOptions) (*model.Store, *model.Snapshot, receiver.FileReport, error) {
	store := model.NewStore(o.store)
	files, err := expandCaptures(files)
	if err != nil {
		return store, store.Snapshot(), receiver.FileReport{}, err
	}
	rep, err := receiver.ReadFiles(store, files, o.read)
	store.Sync()
	if o.listBad != nil {
		for _, b := range rep.BadSamples {
			fmt.Fprintln(o.listBad, b)
		}
		if more := rep.BadLines - len(rep.BadSamples); more > 0 {
			fmt.Fprintf(o.listBad, "… and %d more bad lines\n", more)
		}
	}
	snap := store.Snapshot()
	if err == nil && snap.Stats.Stored == 0 {
		err = noSpans(files, rep, o.listBad != nil)
	}
	return store, snap, rep, err
}

// noSpans says why files gave no span: what they held instead, so a wrong
// file or a log written with telemetry off is told apart from a bug. listed
// says the bad lines were printed already: they are not repeated.
func noSpans(files []string, rep receiver.FileReport, listed bool) error {
	err := fmt.Errorf("no spans in %s", strings.Join(files, ", "))
	lines := 0
	for _, f := range rep.Files {
		lines += f.Lines
	}
	switch {
	case len(rep.BadSamples) > 0 && listed:
		return fmt.Errorf("%w (%d bad, listed above)", err, rep.BadLines)
	case len(rep.BadSamples) > 0:
		return fmt.Errorf("%w (%d bad, first %s)", err, rep.BadLines, rep.BadSamples[0])
	case rep.MetricPoints > 0 || rep.LogRecords > 0:
		return fmt.Errorf("%w: only metrics and logs (metric points: %d, log records: %d); spans come from a trace exporter",
			err, rep.MetricPoints, rep.LogRecords)
	case rep.Skipped > 0:
		return fmt.Errorf("%w: no line is a span record (%d read, first %s); a NeMo Gym server log holds spans only with telemetry on and its console exporter",
			err, rep.Skipped, rep.SkippedSamples[0])
	case lines == 0:
		if len(files) == 1 {
			return fmt.Errorf("%w: the file is empty", err)
		}
		return fmt.Errorf("%w: the files are empty", err)
	}
	return err
}
