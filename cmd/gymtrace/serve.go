package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/mcpserver"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// envAuthToken is read when --auth-token is not given, so the token need not
// appear in the process list.
const envAuthToken = "GYMTRACE_AUTH_TOKEN"

// defaultMaxSpans bounds the live store: past it the oldest rollouts go.
const defaultMaxSpans = 2_000_000

// startCPUProfile profiles the process into path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func cmdServe(args []string) int {
	ctx, cancel := signalContext()
	defer cancel()
	return runServe(ctx, args, os.Stdout, os.Stderr, isTerminal(os.Stdout), nil)
}

// receiverOptions configures startReceivers.
type receiverOptions struct {
	GRPCAddr, HTTPAddr string
	AuthToken          string
	Insecure           bool
	MaxSpans           int   // 0: no bound
	MaxBytes           int64 // 0: no bound
	Queue              int   // batches waiting for the store writer; 0: the store's default
	MaxRecvBytes       int   // 0: receiver.DefaultMaxRecvBytes
	MaxDecompressed    int   // 0: receiver.DefaultMaxDecompressed
	MaxInflight        int64 // 0: a share of MaxBytes (splitMaxBytes)
	BodyTimeout        time.Duration
	AllowHosts         []string
	Limits             receiver.Limits
	Record             string
	Fsync              bool
	// Warn receives warnings such as --insecure on an open address; nil
	// discards them.
	Warn io.Writer
}

// runningReceivers is a store with live receivers in front of it.
type runningReceivers struct {
	Store  *model.Store
	Server *receiver.Server
	// GRPCAddr and HTTPAddr are the bound addresses ("" when off), and
	// MCPAddr the MCP server's, when --mcp-addr started one.
	GRPCAddr, HTTPAddr, MCPAddr string
	// Addrs names both for display, e.g. "grpc 127.0.0.1:4317".
	Addrs []string

	once    sync.Once
	stopErr error
}

// startReceivers starts a store and the OTLP receivers feeding it. The
// caller must call stop. A non-loopback address without a token or
// Insecure fails with receiver.ErrExposed.
func startReceivers(ctx context.Context, o receiverOptions) (*runningReceivers, error) {
	warn := o.Warn
	if warn == nil {
		warn = io.Discard
	}
	storeBytes, inflight := splitMaxBytes(o.MaxBytes, o.MaxInflight)
	store := model.NewStore(model.Options{MaxSpans: o.MaxSpans, MaxBytes: storeBytes, QueueLen: o.Queue, LeanGC: true})
	srv, err := receiver.NewServer(receiver.Config{
		Store:           store,
		GRPCAddr:        o.GRPCAddr,
		HTTPAddr:        o.HTTPAddr,
		AuthToken:       o.AuthToken,
		Insecure:        o.Insecure,
		MaxRecvBytes:    o.MaxRecvBytes,
		MaxDecompressed: o.MaxDecompressed,
		MaxInflight:     inflight,
		BodyTimeout:     o.BodyTimeout,
		AllowHosts:      o.AllowHosts,
		Limits:          o.Limits,
		RecordPath:      o.Record,
		RecordOptions:   receiver.RecordOptions{Fsync: o.Fsync},
		Log:             o.Warn,
	})
	if err == nil {
		err = srv.Start(ctx)
	}
	if err != nil {
		store.Close()
		return nil, withListenHint(err)
	}
	r := &runningReceivers{Store: store, Server: srv}
	r.GRPCAddr, r.HTTPAddr = srv.Addrs()
	if r.GRPCAddr != "" {
		r.Addrs = append(r.Addrs, "grpc "+r.GRPCAddr)
	}
	if r.HTTPAddr != "" {
		r.Addrs = append(r.Addrs, "http "+r.HTTPAddr)
	}
	if o.AuthToken == "" && o.Insecure {
		for _, a := range []string{r.GRPCAddr, r.HTTPAddr} {
			if a != "" && !receiver.IsLoopback(a) {
				fmt.Fprintf(warn, "warning: --insecure: %s accepts spans from anyone who can reach it, with no token\n", a)
			}
		}
	}
	return r, nil
}

// receiverStop bounds how long the receivers take to stop: requests in
// flight get receiver.DefaultStopGrace, then bodies still arriving are cut
// off, and what is left is closed at this deadline; the record writer then
// gets half a second. A stop ends within 2 s whatever clients do, inside
// Docker's 10 s before SIGKILL.
const receiverStop = 1200 * time.Millisecond

// stop shuts everything down in order: the receivers (in-flight requests
// finish or are cut off), then the record's last writes and sync, then the
// store. Safe to call more than once.
func (r *runningReceivers) stop() error {
	r.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), receiverStop)
		defer cancel()
		r.stopErr = r.Server.Shutdown(ctx)
		r.Store.Close()
	})
	return r.stopErr
}

// splitMaxBytes divides --max-bytes between the store and the requests in
// flight (bodies, decoded spans, record lines), which get a quarter: at
// least 16 MiB, at most receiver.DefaultMaxInflight (four of the largest
// requests). The store gets the rest, at least half.
func splitMaxBytes(maxBytes, inflight int64) (store, requests int64) {
	if inflight <= 0 {
		inflight = receiver.DefaultMaxInflight
		if maxBytes > 0 {
			inflight = min(max(maxBytes/4, 16<<20), receiver.DefaultMaxInflight)
		}
	}
	if maxBytes <= 0 {
		return 0, inflight
	}
	return max(maxBytes-inflight, maxBytes/2), inflight
}

// serveFlags are the flags of gymtrace serve.
type serveFlags struct {
	receiverOptions
	cpuProfile     string
	mcpAddr        string
	headless, json bool
	worth          uiWorth
}

// parseServeFlags parses serve's line; done is set when serve must stop
// with code (-h, a bad flag or value).
func parseServeFlags(args []string, stdout, stderr io.Writer) (su *setup, f *serveFlags, code int, done bool) {
	su = newSetup("serve", stdout, stderr, "usage: gymtrace [serve] [flags]\n\nReceives OTLP traces, metrics and logs and shows rollouts as they arrive.\n\n")
	fs := su.fs
	f = &serveFlags{}
	fs.StringVar(&f.GRPCAddr, "grpc-addr", receiver.DefaultGRPCAddr, `OTLP/gRPC listen address ("off" to disable)`)
	fs.StringVar(&f.HTTPAddr, "http-addr", receiver.DefaultHTTPAddr, `OTLP/HTTP listen address ("off" to disable)`)
	su.settingFlags("spec", "span_groups spec to preview against")
	su.variantFlags("the fleet; default: the newest (the summary names the one the capture shows)")
	su.evidenceFlag()
	fs.IntVar(&f.MaxSpans, "max-spans", defaultMaxSpans, "keep at most this many spans, evicting the oldest rollouts (0: no bound)")
	byteSizeVar(fs, &f.MaxBytes, "max-bytes", defaultMaxBytes(), "memory for spans and the requests being received (a quarter of it, at most 256MiB, for requests), e.g. 4GiB; past it the oldest rollouts are evicted (0: no bound; default a quarter of the machine's memory)")
	fs.StringVar(&f.Record, "record", "", "append every accepted request to FILE as OTLP/JSON lines; a request is answered OK only once written")
	fs.BoolVar(&f.Fsync, "fsync", false, "with --record: sync FILE to its disk before answering OK, so an acknowledged span survives a power loss, not only a kill")
	fs.BoolVar(&f.headless, "headless", false, "no terminal interface: a status line on stderr every second (automatic when stdout is not a terminal)")
	fs.BoolVar(&f.json, "json", false, "headless: on SIGINT/SIGTERM print a JSON summary on stdout")
	fs.StringVar(&f.AuthToken, "auth-token", os.Getenv(envAuthToken), "require 'authorization: Bearer TOKEN' on every request (default $"+envAuthToken+")")
	fs.Func("allow-host", "also accept HOST in the Host and Origin headers of a loopback OTLP/HTTP receiver (repeatable; others are refused 403)", func(v string) error {
		f.AllowHosts = append(f.AllowHosts, v)
		return nil
	})
	fs.BoolVar(&f.Insecure, "insecure", false, "allow a non-loopback address without a token")
	intByteSizeVar(fs, &f.MaxRecvBytes, "max-recv-bytes", receiver.DefaultMaxRecvBytes, "largest request accepted as sent (and, over gRPC, decompressed), e.g. 64MB; larger ones get 413 / RESOURCE_EXHAUSTED")
	intByteSizeVar(fs, &f.MaxDecompressed, "max-decompressed-bytes", receiver.DefaultMaxDecompressed, "largest HTTP body accepted after decompression, e.g. 64MiB")
	byteSizeVar(fs, &f.MaxInflight, "max-inflight-bytes", 0, "memory the requests being received may hold at once, taken from --max-bytes (default a quarter of it, at most 256MiB)")
	fs.DurationVar(&f.BodyTimeout, "body-timeout", receiver.DefaultBodyTimeout, "longest an HTTP request body may take to arrive")
	fs.IntVar(&f.Limits.MaxAttrs, "max-attrs", receiver.DefaultMaxAttrs, "attributes kept per span, event or link; the rest are dropped and counted")
	intByteSizeVar(fs, &f.Limits.MaxValueLen, "max-value-len", receiver.DefaultMaxValueLen, "longest attribute value kept, e.g. 4KiB; longer ones are cut and counted")
	fs.IntVar(&f.Limits.MaxEvents, "max-events", receiver.DefaultMaxEvents, "events kept per span; the rest are dropped and counted")
	fs.IntVar(&f.Limits.MaxLinks, "max-links", receiver.DefaultMaxLinks, "links kept per span; the rest are dropped and counted")
	intByteSizeVar(fs, &f.Limits.MaxNameLen, "max-name-len", receiver.DefaultMaxNameLen, "longest span, event or attribute key name kept, e.g. 1KiB; longer ones are cut and counted")
	fs.StringVar(&f.mcpAddr, "mcp-addr", "", mcpAddrUsage)
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a pprof CPU profile of the whole run to FILE")
	fs.IntVar(&f.Queue, "queue", 256, "batches that may wait for the store; past it senders are told to retry")
	wf := addWorthFlags(fs)
	if code, done := su.parseNoArgs(args); done {
		return su, nil, code, true
	}
	worth, err := wf.ui()
	if err != nil {
		return su, nil, su.fail("%v", err), true
	}
	f.worth = worth
	if f.Fsync && f.Record == "" {
		return su, nil, su.fail("--fsync needs --record FILE"), true
	}
	if f.json && !f.headless {
		// --json only makes sense without the TUI.
		f.headless = true
	}
	return su, f, exitOK, false
}

// runServe is gymtrace serve with its inputs injected: it returns when ctx
// ends (headless) or the user quits (TUI). ready, when set, is called once
// the receivers listen.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer, tty bool, ready func(*runningReceivers)) int {
	su, f, code, done := parseServeFlags(args, stdout, stderr)
	if done {
		return code
	}
	feed, err := su.evidenceFeed(true)
	if err != nil {
		return su.fail("%v", err)
	}
	if f.cpuProfile != "" {
		stop, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			return su.fail("--cpuprofile: %v", err)
		}
		defer stop()
	}
	// Nothing has arrived yet to tell the variant from: --gym-version, else
	// the newest.
	vc, reg, err := su.registry("newest: nothing captured yet")
	if err != nil {
		return su.fail("%v", err)
	}
	specText, source, err := su.setting()
	if err != nil {
		return su.fail("%v", err)
	}
	res, err := su.applied(reg, specText, source)
	if err != nil {
		return su.fail("%v", err)
	}
	current := res.Set
	held := &heldLog{w: stderr}
	f.Warn = held
	rr, err := startReceivers(ctx, f.receiverOptions)
	if err != nil {
		return su.fail("%v", err)
	}
	if f.mcpAddr != "" {
		mcpEvidence, err := su.evidenceFeed(true)
		if err != nil {
			_ = rr.stop()
			return su.fail("%v", err)
		}
		m, err := startLiveMCP(ctx, f.mcpAddr, f.AuthToken, f.Insecure, rr.Store, vc, reg, *su.gymVersion, *su.groups,
			report.Setting{Spec: specText, Source: source}, mcpserver.EvidenceFunc(mcpEvidence), held)
		if err != nil {
			_ = rr.stop()
			return su.fail("%v", err)
		}
		// A call in flight finishes on its snapshot, which stopping the
		// receivers and closing the store leave whole.
		defer m.stop()
		rr.MCPAddr = m.Addr
		fmt.Fprintf(held, "gymtrace: MCP (streamable HTTP) on http://%s/\n", m.Addr)
	}
	if ready != nil {
		ready(rr)
	}
	if f.headless || !tty {
		return runHeadless(ctx, rr, reg, stdout, stderr, f.json, time.Second, *su.gymVersion)
	}
	held.hold()
	uiErr := runUI(uiConfig{
		Store:       rr.Store,
		Registry:    reg,
		Current:     current,
		CurrentSpec: specText,
		Variant:     vc.String(),
		Addrs:       uiAddrs(rr),
		Live:        true,
		Title:       "gymtrace serve",
		Ctx:         ctx,
		Worth:       f.worth,
		Redetect:    liveVariant(*su.gymVersion, *su.groups, specText),
		Evidence:    feed,
	})
	held.release()
	stopErr := rr.stopBounded(stderr)
	if uiErr != nil || stopErr != nil {
		fmt.Fprintf(stderr, "gymtrace serve: %v\n", errors.Join(uiErr, stopErr))
		return exitUsage
	}
	return exitOK
}

// runHeadless prints a status line every tick until ctx ends, then stops
// the receivers (flushing --record) and, with jsonOut, prints the summary.
func runHeadless(ctx context.Context, rr *runningReceivers, reg *groups.Registry, stdout, stderr io.Writer, jsonOut bool, every time.Duration, gymVersion string) int {
	fmt.Fprintf(stderr, "gymtrace: receiving OTLP on %s\n", joinAddrs(rr.Addrs))
	tl := newTallier(reg)
	defer tl.watch(ctx, rr.Store)()
	statusLoop(ctx, nil, rr, tl, every, stderr)
	// Stop first: the summary must count every acknowledged span, and the
	// record must be on disk before anyone reads the summary.
	stopErr := rr.stopBounded(stderr)
	snap := rr.Store.Snapshot()
	code := exitOK
	if stopErr != nil {
		fmt.Fprintf(stderr, "gymtrace serve: %v\n", stopErr)
		code = exitUsage
	}
	if !jsonOut {
		// The last line, not a report: the live tally will do, so a stop
		// never waits for a check of the whole store.
		fmt.Fprintln(stderr, statusLine(snap, rr.Server.Stats(), tl.live()))
		return code
	}
	tally := tl.final(snap)
	sum := newServeSummary(snap, rr.Server.Stats(), tally)
	// By now the capture can tell the variant.
	if vc, err := chooseVariant(gymVersion, snap); err == nil {
		sum.variantJSON = vc.json()
	}
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "gymtrace serve: encode summary: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "%s\n", b)
	return code
}

func joinAddrs(addrs []string) string {
	out := ""
	for i, a := range addrs {
		if i > 0 {
			out += ", "
		}
		out += a
	}
	return out
}

// statusLoop is the headless loop of serve and demo: a status line every
// tick, and a line at once when --record fails or resumes, until ctx ends
// or until is closed (nil: never).
func statusLoop(ctx context.Context, until <-chan struct{}, rr *runningReceivers, tl *tallier, every time.Duration, stderr io.Writer) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	changed := rr.Server.RecordChanged()
	for {
		select {
		case <-ctx.Done():
			return
		case <-until:
			return
		case <-changed:
			// At once, not at the next tick: the disk is full now, and
			// senders are being refused.
			fmt.Fprintln(stderr, recordNotice(rr.Server.Stats()))
		case <-tick.C:
			snap := rr.Store.Snapshot()
			fmt.Fprintln(stderr, statusLine(snap, rr.Server.Stats(), tl.live()))
		}
	}
}

// recordNotice is the line printed when the record starts or stops
// failing.
func recordNotice(st receiver.Stats) string {
	if st.RecordFailing {
		return fmt.Sprintf("gymtrace: record failing: %s; requests are refused as retryable (senders keep their spans) until it can be written again, tried every second",
			receiver.RecordCause(st.RecordError))
	}
	return fmt.Sprintf("gymtrace: record resumed after %d failed writes (%s); %d spans were refused meanwhile",
		st.RecordFailures, receiver.RecordCause(st.RecordError), st.RecordRefused)
}

// statusLine is the headless status: N cumulative accepted spans, D spans
// lost (evicted by --max-spans or rejected as invalid), R spans refused
// with a retryable status (senders retry them), and the requests refused
// whole, by reason. A record that could not write adds record_refused
// (spans), record_failures, and record_error (the latest cause), with
// record_failing=true while it lasts.
//
// Rollouts are t's, found by gate's structure rules as everywhere else; a
// live line adds in_flight (rollouts whose root has not arrived) and, once an
// end-of-run span is in, job=running or job=ended.
func statusLine(s *model.Snapshot, st receiver.Stats, t whatif.Tally) string {
	line := fmt.Sprintf("spans=%d rollouts=%d traces=%d dropped=%d refused=%d requests_refused=%d",
		s.Stats.Accepted, t.Rollouts, s.Stats.Traces, dropped(s, st), refused(s, st), total(st.RequestsRefused))
	if len(st.RequestsRefused) > 0 {
		line += " (" + receiver.FormatRefusals(st.RequestsRefused) + ")"
	}
	// tallied: the spans the rollout counts are of (the tally runs apart
	// and may be a second or two behind spans=).
	line += fmt.Sprintf(" in_flight=%d joined=%d split=%d pending=%d tallied=%d", t.InFlight, t.Joined, t.Split, t.Pending, t.Spans)
	if t.Job != whatif.JobUnknown {
		line += " job=" + t.Job.String()
	}
	if st.RecordRefused > 0 || st.RecordFailures > 0 {
		line += fmt.Sprintf(" record_refused=%d record_failures=%d", st.RecordRefused, st.RecordFailures)
		if st.RecordError != nil {
			line += fmt.Sprintf(" record_error=%q", receiver.RecordCause(st.RecordError))
		}
		if st.RecordFailing {
			line += " record_failing=true"
		}
	}
	if st.Profiles > 0 {
		line += fmt.Sprintf(" profiles=%d", st.Profiles)
	}
	return line
}

// dropped counts spans lost for good: a retryable refusal is not a loss.
func dropped(s *model.Snapshot, st receiver.Stats) int64 {
	return s.Stats.EvictedSpans + st.Rejected
}

// refused counts spans answered "busy, retry": the sender still has them.
func refused(s *model.Snapshot, st receiver.Stats) int64 {
	return s.Stats.Refused + st.RecordRefused
}

func total(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// serveSummary is the --json summary of serve --headless. The keys are a
// documented contract (DESIGN §5): they may grow, never change meaning.
type serveSummary struct {
	variantJSON
	SpansReceived   int64            `json:"spans_received"`  // accepted into the store, cumulative
	SpansStored     int              `json:"spans_stored"`    // held at exit
	BytesStored     int64            `json:"bytes_stored"`    // what the held spans take, as --max-bytes counts
	StringBytes     int64            `json:"string_bytes"`    // interned names, keys and short values
	StringsDropped  int64            `json:"strings_dropped"` // not interned: the string table was full
	SpansDropped    int64            `json:"spans_dropped"`   // lost: evicted + rejected
	Rollouts        int              `json:"rollouts"`        // found by structure, as check counts them
	RolloutsJoined  int              `json:"rollouts_joined"`
	RolloutsSplit   int              `json:"rollouts_split"`
	RunSpans        int              `json:"run_level_spans"` // probes, gym.job, /aggregate_metrics, start-up: no rollout's
	Job             string           `json:"job"`             // unknown, running or ended
	Traces          int              `json:"traces"`
	Services        map[string]int64 `json:"services"` // service.name → stored spans
	SpansRefused    int64            `json:"spans_refused"`
	SpansEvicted    int64            `json:"spans_evicted"`
	RolloutsEvicted int64            `json:"rollouts_evicted"`
	SpansRejected   int64            `json:"spans_rejected"` // invalid spans answered with partial success
	MetricPoints    int64            `json:"metric_points"`
	LogRecords      int64            `json:"log_records"`
	Duplicates      int64            `json:"duplicates"`
	AttrsDropped    int64            `json:"attrs_dropped"`    // past the per-span attribute cap
	ValuesTruncated int64            `json:"values_truncated"` // past the value length cap
	ValuesRepaired  int64            `json:"values_repaired"`  // strings kept with U+FFFD for bytes not UTF-8
	RequestsRefused map[string]int64 `json:"requests_refused"` // reason → requests refused whole
	EventsDropped   int64            `json:"events_dropped"`   // past the per-span event cap
	LinksDropped    int64            `json:"links_dropped"`    // past the per-span link cap
	NamesTruncated  int64            `json:"names_truncated"`  // past the name length cap
	// SpansNotRecorded are acknowledged spans --record does not hold:
	// none, since a request is answered OK only once written.
	SpansNotRecorded int64 `json:"spans_not_recorded"`
	// RecordError is the latest failed write's cause; RecordFailures
	// counts failed writes, RecordRefusedSpans the spans refused (as
	// retryable) because the record could not take them, RecordFailing
	// whether it still failed at exit, and SpansRecorded what it holds.
	RecordError        string `json:"record_error,omitempty"`
	RecordFailures     int64  `json:"record_failures"`
	RecordRefusedSpans int64  `json:"record_refused_spans"`
	RecordFailing      bool   `json:"record_failing"`
	SpansRecorded      int64  `json:"spans_recorded"`
	// RequestsCutOff counts requests whose body was still arriving when the
	// stop cut it off (also in requests_refused as cut_off_at_stop).
	RequestsCutOff int64 `json:"requests_cut_off"`
	Profiles       int64 `json:"profiles"` // OTLP profiles received (counted, not stored)
}

func newServeSummary(s *model.Snapshot, st receiver.Stats, t whatif.Tally) serveSummary {
	services := map[string]int64{}
	for id, n := range s.Services {
		if n > 0 {
			services[s.ServiceName(model.ResourceID(id))] += n
		}
	}
	sum := serveSummary{
		SpansReceived:   s.Stats.Accepted,
		SpansStored:     s.Stats.Stored,
		BytesStored:     s.Stats.StoredBytes,
		StringBytes:     s.Stats.StringBytes,
		StringsDropped:  s.Stats.StringsDropped,
		SpansDropped:    dropped(s, st),
		Rollouts:        t.Rollouts,
		RolloutsJoined:  t.Joined,
		RolloutsSplit:   t.Split,
		RunSpans:        t.RunSpans,
		Job:             t.Job.String(),
		Traces:          s.Stats.Traces,
		Services:        services,
		SpansRefused:    refused(s, st),
		SpansEvicted:    s.Stats.EvictedSpans,
		RolloutsEvicted: s.Stats.EvictedRollouts,
		SpansRejected:   st.Rejected,
		MetricPoints:    s.Stats.MetricPoints,
		LogRecords:      s.Stats.LogRecords,
		Duplicates:      s.Stats.Duplicates,
		AttrsDropped:    s.Stats.AttrsDropped,
		ValuesTruncated: s.Stats.ValuesTruncated,
		ValuesRepaired:  s.Stats.ValuesRepaired,
		RequestsRefused: st.RequestsRefused,
	}
	sum.EventsDropped, sum.LinksDropped, sum.NamesTruncated = s.Stats.EventsDropped, s.Stats.LinksDropped, s.Stats.NamesTruncated
	if st.RecordError != nil {
		sum.RecordError = st.RecordError.Error()
	}
	sum.RecordFailures, sum.RecordRefusedSpans, sum.RecordFailing = st.RecordFailures, st.RecordRefused, st.RecordFailing
	sum.SpansRecorded = st.RecordedSpans
	sum.RequestsCutOff, sum.Profiles = st.CutOff, st.Profiles
	return sum
}
