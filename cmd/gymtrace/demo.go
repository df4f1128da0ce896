package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/mcpserver"

	"github.com/nemo-gym/gymtrace/gymsim"
	"github.com/nemo-gym/gymtrace/receiver"
)

func cmdDemo(args []string) int {
	ctx, stop := signalContext()
	defer stop()
	return runDemo(ctx, args, os.Stdout, os.Stderr, isTerminal(os.Stdout))
}

// demoOptions are the demo's flags.
type demoOptions struct {
	spec        string
	mcpAddr     string
	rate        float64
	concurrency int
	seed        int64
	rollouts    int
	runSize     int
	protocol    string
	latency     time.Duration
	batch       time.Duration
	headless    bool
	json        bool
	grpcAddr    string
	httpAddr    string
	maxSpans    int
	// procSpecs are the --process-spec values, NAME=SPEC, in flag order.
	procSpecs []string
	variant   string
	obs       bool
	aiohttp   bool
	// standalone runs the driver without telemetry.
	standalone bool
	leak       float64
	// race is the share of 200 answers whose caller is gone before the
	// last body message (G3's disconnect listener hears it).
	race   float64
	record string
	// backend is the model backend behind the model server ("" none).
	backend string
	// perTask is rollouts per task (Gym's num_repeats).
	perTask int
	// evidenceOut is where the fleet writes Gym's rollout files; "" makes
	// a temporary folder, removed on exit.
	evidenceOut string
}

// runDemo starts the receivers, a simulated fleet exporting real OTLP to
// them, and the TUI (or the headless status lines). It returns when the user
// quits, on ctx's end (SIGINT/SIGTERM/SIGHUP), or, headless with --rollouts, when
// every rollout was answered and flushed.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer, tty bool) int {
	su := newSetup("demo", stdout, stderr, "usage: gymtrace demo [flags]\n\nRuns a simulated NeMo Gym fleet exporting real OTLP to the receivers and shows it.\n\n")
	fs := su.fs
	var o demoOptions
	fs.StringVar(&o.spec, "spec", "all", "span_groups the simulated fleet runs with (the setting previewed against; blank is Gym's default)")
	variantUsage := "the Gym telemetry variant (" + strings.Join(gymsim.VariantNames(), ", ") + ") or Gym version the fleet runs; specs are read as it reads them"
	fs.StringVar(&o.variant, "gym-version", "G1", variantUsage)
	fs.StringVar(&o.variant, "gym-variant", "G1", variantUsage+" (the same as --gym-version)")
	groupsFile := fs.String("groups", "", "groups file adding span groups, presets and rules")
	su.evidenceFlag()
	fs.BoolVar(&o.obs, "observability", false, "Gym's observability_enabled (on by default in the TUI, so Gym's rollout files join by id; off headless): rollout ids on spans and /ng-rollout/{id}/ URL prefixes")
	fs.BoolVar(&o.aiohttp, "aiohttp", false, "the aiohttp client instrumentation (as NeMo-RL runs it): a second CLIENT span per call that injects traceparent whatever the spec")
	fs.BoolVar(&o.standalone, "standalone", false, "the driver runs without telemetry (standalone collect_rollouts): no gym.job, each /run a root")
	fs.Float64Var(&o.leak, "context-leak", 0, "share of requests (0-1) whose span is carried over from the previous request on a kept-alive connection")
	fs.Float64Var(&o.race, "disconnect-race", 0.01, "G3: share of 200 answers (0-1) whose caller is gone before the last body message, so the disconnect listener's receive says http.disconnect and one http send is missing (a few per real run)")
	fs.StringVar(&o.backend, "model-backend", "", "a model backend behind the model server whose spans carry GenAI token usage: vllm (vLLM's llm_request under Gym's call) or gateway (an OpenAI-style `chat <model>` CLIENT span, vLLM's span under it); default none")
	fs.StringVar(&o.record, "record", "", "append every accepted trace request to FILE as OTLP/JSON lines (as serve --record)")
	fs.Float64Var(&o.rate, "rate", 3, "rollouts started per second (0 = as fast as possible)")
	fs.IntVar(&o.concurrency, "concurrency", 8, "rollouts in flight at most")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the rollout shapes")
	fs.IntVar(&o.rollouts, "rollouts", 0, "rollouts to run (0 = until interrupted)")
	fs.IntVar(&o.perTask, "rollouts-per-task", 4, "rollouts of each task (Gym's num_repeats), so a task's reward can vary between its rollouts")
	fs.StringVar(&o.evidenceOut, "evidence-out", "", "folder where the fleet writes Gym's rollout files (rollouts.jsonl, rollouts_failures.jsonl, ...) as rollouts complete (default: a temporary folder, removed on exit)")
	fs.IntVar(&o.runSize, "run-size", 0, "rollouts per collection run, one gym.job each (0 = all of --rollouts, or 10)")
	fs.StringVar(&o.protocol, "protocol", "grpc", "how the fleet exports: grpc or http")
	fs.DurationVar(&o.latency, "latency", 20*time.Millisecond, "unit of simulated work (a model call takes a few)")
	fs.DurationVar(&o.batch, "batch-timeout", time.Second, "the fleet's batch span processor delay")
	fs.BoolVar(&o.headless, "headless", false, "no TUI: a status line on stderr every second")
	fs.BoolVar(&o.json, "json", false, "headless: print a JSON summary on stdout on exit")
	fs.StringVar(&o.grpcAddr, "grpc-addr", "", "OTLP/gRPC listen address (default 127.0.0.1:4317 if free, else any free port)")
	fs.StringVar(&o.httpAddr, "http-addr", "", "OTLP/HTTP listen address (default 127.0.0.1:4318 if free, else any free port)")
	fs.StringVar(&o.mcpAddr, "mcp-addr", "", mcpAddrUsage)
	fs.IntVar(&o.maxSpans, "max-spans", 2_000_000, "spans kept in memory; oldest rollouts are evicted past it")
	fs.Func("process-spec", "NAME=SPEC: span_groups of one fleet process instead of --spec (repeatable; NAME is one of "+
		strings.Join(gymsim.ProcessNames(), ", ")+", or a role: driver, agent, model, resources), e.g. policy_model=model_call to watch a join break", func(v string) error {
		o.procSpecs = append(o.procSpecs, v)
		return nil
	})
	wf := addWorthFlags(fs)
	if code, done := su.parseNoArgs(args); done {
		return code
	}
	fail := su.fail
	worth, err := wf.ui()
	if err != nil {
		return fail("%v", err)
	}
	if o.protocol != "grpc" && o.protocol != "http" {
		return fail("--protocol %q: want grpc or http", o.protocol)
	}
	if o.rollouts < 0 || o.rate < 0 || o.concurrency < 1 {
		return fail("--rollouts and --rate must be 0 or more, --concurrency at least 1")
	}
	if o.perTask < 1 {
		return fail("--rollouts-per-task %d: must be at least 1", o.perTask)
	}
	if o.leak < 0 || o.leak > 1 {
		return fail("--context-leak must be between 0 and 1")
	}
	if o.race < 0 || o.race > 1 {
		return fail("--disconnect-race must be between 0 and 1")
	}
	switch o.backend {
	case "none":
		o.backend = ""
	case "", gymsim.BackendVLLM, gymsim.BackendGateway:
	default:
		return fail("--model-backend %q: want %s, %s or none", o.backend, gymsim.BackendVLLM, gymsim.BackendGateway)
	}
	// The registry follows the fleet's variant, so the preview reads specs
	// as the simulated Gym does.
	gv, err := groups.LookupVariant(o.variant)
	if err != nil {
		return fail("--gym-version: %v", err)
	}
	variant, err := gymsim.LookupVariant(gv.Name)
	if err != nil {
		return fail("--gym-version: %v", err)
	}
	vc := variantChoice{gv, "--gym-version: the variant the simulated fleet runs"}
	reg, err := loadRegistry(vc, *groupsFile)
	if err != nil {
		return fail("%v", err)
	}
	spec := previewSet(reg, o.spec)
	procSpecs, err := parseProcessSpecs(variant, o.procSpecs)
	if err != nil {
		return fail("%v", err)
	}
	headless := o.headless || o.json || !tty
	if !headless && !flagGiven(fs, "observability") {
		// On screen the demo shows Gym's outcomes beside the traces with no
		// set-up: that takes the rollout ids observability puts on spans.
		// Headless runs keep Gym's default for scripts and comparisons.
		o.obs = true
	}
	evidenceDir := o.evidenceOut
	if evidenceDir == "" {
		if evidenceDir, err = os.MkdirTemp("", "gymtrace-demo-evidence-"); err != nil {
			return fail("--evidence-out: %v", err)
		}
		// Removed after everything else, once the fleet is done writing.
		defer os.RemoveAll(evidenceDir)
	} else if err := os.MkdirAll(evidenceDir, 0o755); err != nil {
		return fail("--evidence-out: %v", err)
	}
	if len(su.evidence) == 0 {
		// The fleet's own rollout files, read as they grow: rewards with
		// no set-up.
		su.evidence = []string{evidenceDir}
	}
	feed, err := su.evidenceFeed(true)
	if err != nil {
		return fail("%v", err)
	}
	held := &heldLog{w: stderr}
	rr, err := startDemoReceivers(ctx, o, held)
	if err != nil {
		return fail("%v", err)
	}
	if o.mcpAddr != "" {
		mcpEvidence, err := su.evidenceFeed(true)
		if err != nil {
			_ = rr.stop()
			return su.fail("%v", err)
		}
		// The fleet's variant is known: it is pinned.
		m, err := startLiveMCP(ctx, o.mcpAddr, os.Getenv(envAuthToken), false, rr.Store, vc, reg, vc.V.Name, *groupsFile,
			report.Setting{Spec: o.spec, Source: "--spec"}, mcpserver.EvidenceFunc(mcpEvidence), held)
		if err != nil {
			_ = rr.stop()
			return fail("%v", err)
		}
		defer m.stop()
		rr.MCPAddr = m.Addr
		fmt.Fprintf(held, "gymtrace demo: MCP (streamable HTTP) on http://%s/\n", m.Addr)
	}
	grpcAddr, httpAddr := rr.GRPCAddr, rr.HTTPAddr
	endpoint := grpcAddr
	if o.protocol == "http" {
		endpoint = httpAddr
	}
	fleet, err := gymsim.Start(ctx, gymsim.Config{
		Seed: o.seed, Variant: variant.Name, Spec: o.spec, ProcessSpecs: procSpecs, Rollouts: o.rollouts, RunSize: o.runSize, Rate: o.rate,
		Concurrency: o.concurrency, Protocol: o.protocol, Endpoint: endpoint,
		Latency: o.latency, BatchTimeout: o.batch,
		Observability: o.obs, AIOHTTP: o.aiohttp, Standalone: o.standalone, ContextLeak: o.leak,
		DisconnectRace: o.race, ModelBackend: o.backend,
		RolloutsPerTask: o.perTask, EvidenceDir: evidenceDir,
	})
	if err != nil {
		_ = rr.stop()
		return fail("start fleet: %v", err)
	}
	// stopAll flushes the fleet into the receivers, then stops them, so the
	// store holds every span the fleet emitted.
	stopAll := func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		ferr := fleet.Shutdown(sctx)
		return errors.Join(ferr, rr.stop())
	}
	fmt.Fprintf(stderr, "gymtrace demo: receiving OTLP/gRPC on %s and OTLP/HTTP on %s; fleet (Gym %s%s) exports %s with span_groups %q%s\n",
		grpcAddr, httpAddr, variant.Name, fleetSwitches(o), o.protocol, o.spec, formatProcessSpecs(variant, procSpecs, " except ", ""))
	kept := ""
	if o.evidenceOut == "" {
		kept = " (removed on exit; --evidence-out DIR keeps them)"
	}
	fmt.Fprintf(stderr, "gymtrace demo: %d rollouts per task; the fleet writes Gym's rollout files in %s%s\n", o.perTask, evidenceDir, kept)
	for _, name := range gymsim.ProcessNamesOf(variant) {
		if w := fleet.Warnings()[name]; w != "" {
			fmt.Fprintf(stderr, "gymtrace demo: %s: %s\n", name, w)
		}
	}

	if !headless {
		held.hold()
		uiErr := runUI(uiConfig{
			Store: rr.Store, Registry: reg, Current: spec, CurrentSpec: o.spec, Variant: vc.String(),
			Addrs: uiAddrs(rr), Live: true, Worth: worth, Evidence: feed,
			// SIGHUP (the terminal gone) ends the demo as it ends serve.
			Ctx:   ctx,
			Title: fmt.Sprintf("gymtrace demo (seed %d, Gym %s, %s%s)", o.seed, variant.Name, o.spec, formatProcessSpecs(variant, procSpecs, "; ", "")),
		})
		held.release()
		if err := stopAll(); err != nil {
			fmt.Fprintf(stderr, "gymtrace demo: shutdown: %v\n", err)
		}
		if uiErr != nil {
			return fail("%v", uiErr)
		}
		return exitOK
	}

	// With --rollouts the demo ends once the fleet has run them; else on
	// ctx's end, as serve.
	var finished <-chan struct{}
	if o.rollouts > 0 {
		finished = fleet.Done()
	}
	tl := newTallier(reg)
	defer tl.watch(ctx, rr.Store)()
	statusLoop(ctx, finished, rr, tl, time.Second, stderr)
	err = stopAll()
	snap := rr.Store.Snapshot()
	tally := tl.live()
	if o.json {
		tally = tl.final(snap) // the summary judges every rollout, as check does
	}
	fmt.Fprintln(stderr, statusLine(snap, rr.Server.Stats(), tally))
	if err != nil {
		fmt.Fprintf(stderr, "gymtrace demo: shutdown: %v\n", err)
	}
	if o.json {
		sum := newServeSummary(snap, rr.Server.Stats(), tally)
		sum.variantJSON = vc.json()
		run := demoRunTraffic{Spans: tally.RunSpans, Traces: tally.RunTraces}
		if err := writeDemoSummary(stdout, sum, run, fleet.Stats(), o.spec, variant.Name, procSpecs, evidenceDir); err != nil {
			return fail("%v", err)
		}
	}
	return exitOK
}

// startDemoReceivers listens on the flags' addresses; without them it tries
// the OTLP default ports and falls back to free ones, so the demo also runs
// where a collector already holds 4317/4318.
func startDemoReceivers(ctx context.Context, o demoOptions, warn io.Writer) (*runningReceivers, error) {
	opts := receiverOptions{GRPCAddr: o.grpcAddr, HTTPAddr: o.httpAddr, MaxSpans: o.maxSpans, Record: o.record, Warn: warn}
	if opts.GRPCAddr == "" {
		opts.GRPCAddr = receiver.DefaultGRPCAddr
	}
	if opts.HTTPAddr == "" {
		opts.HTTPAddr = receiver.DefaultHTTPAddr
	}
	rr, err := startReceivers(ctx, opts)
	if err == nil || (o.grpcAddr != "" && o.httpAddr != "") {
		return rr, err
	}
	if o.grpcAddr == "" {
		opts.GRPCAddr = "127.0.0.1:0"
	}
	if o.httpAddr == "" {
		opts.HTTPAddr = "127.0.0.1:0"
	}
	return startReceivers(ctx, opts)
}

// demoSummary is the --json summary: serve's keys, plus the spec and what
// the fleet says it emitted, so the two can be compared.
type demoSummary struct {
	serveSummary
	RunTraffic demoRunTraffic `json:"run_traffic"`
	Spec       string         `json:"spec"`
	// ProcessSpecs maps a process to its own span_groups, when
	// --process-spec gave one.
	ProcessSpecs map[string]string `json:"process_specs,omitempty"`
	Fleet        demoFleet         `json:"fleet"`
	// EvidenceDir is where the fleet wrote Gym's rollout files.
	EvidenceDir string `json:"evidence_dir"`
}

// demoRunTraffic counts the run-level spans and the traces holding only them.
type demoRunTraffic struct {
	Spans  int `json:"spans"`
	Traces int `json:"traces"`
}

type demoFleet struct {
	RolloutsStarted   int64 `json:"rollouts_started"`
	RolloutsCompleted int64 `json:"rollouts_completed"`
	RolloutsFailed    int64 `json:"rollouts_failed"`
	SpansEmitted      int64 `json:"spans_emitted"`
	ExportErrors      int64 `json:"export_errors"`
}

func writeDemoSummary(w io.Writer, sum serveSummary, run demoRunTraffic, fs gymsim.Stats, spec, variant string, procSpecs map[string]string, evidenceDir string) error {
	// The fleet's variant is the one its spans are read as; it stays first,
	// as in every --json output.
	sum.GymVariant = variant
	b, err := json.MarshalIndent(demoSummary{
		serveSummary: sum,
		RunTraffic:   run,
		Spec:         spec,
		ProcessSpecs: procSpecs,
		Fleet: demoFleet{
			RolloutsStarted: fs.Started, RolloutsCompleted: fs.Completed, RolloutsFailed: fs.Failed,
			SpansEmitted: fs.Spans, ExportErrors: fs.ExportErrors,
		},
		EvidenceDir: evidenceDir,
	}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// parseProcessSpecs parses --process-spec values: NAME=SPEC, NAME a fleet
// process or its role. A process given twice keeps the last value, as flags
// do. SPEC is passed on as the process would read it.
func parseProcessSpecs(v *gymsim.Variant, vals []string) (map[string]string, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	names := gymsim.ProcessNamesOf(v)
	out := map[string]string{}
	for _, val := range vals {
		name, spec, ok := strings.Cut(val, "=")
		if !ok {
			return nil, fmt.Errorf("--process-spec %q: want NAME=SPEC", val)
		}
		canon, ok := gymsim.CanonicalProcess(v, name)
		if !ok {
			return nil, fmt.Errorf("--process-spec %q: unknown process %q (want one of %s, or a role: driver, agent, model, resources)", val, name, strings.Join(names, ", "))
		}
		out[canon] = spec
	}
	return out, nil
}

// previewSet is the fleet's spec as the preview knows it: the parts the
// registry knows, unioned; a part Gym would reject or drop is left out.
func previewSet(reg *groups.Registry, spec string) groups.Set {
	var set groups.Set
	for _, part := range strings.Split(spec, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		if s, err := reg.Parse(part); err == nil {
			set |= s
		}
	}
	if strings.TrimSpace(spec) == "" {
		set, _ = reg.Parse("default")
	}
	return set
}

// fleetSwitches names the deployment switches the demo's fleet runs with.
func fleetSwitches(o demoOptions) string {
	var on []string
	if o.obs {
		on = append(on, "observability")
	}
	if o.aiohttp {
		on = append(on, "aiohttp")
	}
	if o.standalone {
		on = append(on, "standalone")
	}
	if o.leak > 0 {
		on = append(on, fmt.Sprintf("context leak %g", o.leak))
	}
	if o.backend != "" {
		on = append(on, "model backend "+o.backend)
	}
	if len(on) == 0 {
		return ""
	}
	return ", " + strings.Join(on, ", ")
}

// formatProcessSpecs renders the per-process specs as prefix NAME=SPEC, ...
// suffix, in the fleet's process order; "" for none.
func formatProcessSpecs(v *gymsim.Variant, specs map[string]string, prefix, suffix string) string {
	var parts []string
	for _, name := range gymsim.ProcessNamesOf(v) {
		if spec, ok := specs[name]; ok {
			parts = append(parts, fmt.Sprintf("%s=%s", name, spec))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return prefix + strings.Join(parts, ", ") + suffix
}

// flagGiven reports whether the command line set the flag name.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
