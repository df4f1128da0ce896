package receiver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nemo-gym/gymtrace/model"
	"google.golang.org/grpc"
)

// Defaults for Config fields left zero.
const (
	DefaultGRPCAddr = "127.0.0.1:4317"
	DefaultHTTPAddr = "127.0.0.1:4318"
	// DefaultMaxRecvBytes and DefaultMaxDecompressed bound one request, as
	// sent and after decompression: 64 MiB, the default OTLP 1.11
	// recommends, on both transports.
	DefaultMaxRecvBytes    = 64 << 20
	DefaultMaxDecompressed = 64 << 20
	DefaultRetryAfter      = time.Second
	DefaultQueueWait       = time.Second
	// DefaultStopGrace is how long a stop lets requests in flight finish:
	// a body still arriving after it is cut off (and counted), so a stop
	// ends within Docker's and systemd's patience however clients behave.
	DefaultStopGrace = 500 * time.Millisecond
)

// Off, given as an address, disables that transport.
const Off = "off"

// Config configures a Server. Only Store is required.
type Config struct {
	// Store receives every accepted batch. The Server never closes it.
	Store *model.Store
	// GRPCAddr and HTTPAddr are host:port to listen on (port 0 picks a free
	// one; Addrs reports it). Empty means the default; Off disables.
	GRPCAddr, HTTPAddr string
	// AuthToken, when set, must come with every request as
	// "authorization: Bearer <token>". Listening beyond loopback requires it
	// unless Insecure is set.
	AuthToken string
	Insecure  bool
	// MaxRecvBytes bounds one request as sent (the gRPC message, the HTTP
	// body) and, on gRPC, after decompression too.
	MaxRecvBytes int
	// MaxDecompressed bounds an HTTP body after decompression, so a small
	// compressed body cannot expand without limit.
	MaxDecompressed int
	// AllowHosts are host names, besides loopback ones, that requests to a
	// loopback HTTP listener may name in Host and Origin.
	AllowHosts []string
	// BodyTimeout bounds reading one HTTP request body.
	BodyTimeout time.Duration
	// MaxInflight bounds the memory of the requests being handled at once,
	// on both transports: bodies as read and inflated, the spans decoded
	// from them and their record lines. A request waits up to MemoryWait
	// for room, then is refused as retryable; one at a time may pass the
	// bound (see memBudget).
	MaxInflight int64
	MemoryWait  time.Duration
	// Limits bound what the decoders keep of one span.
	Limits Limits
	// Record, or RecordPath (opened for appending), receives every accepted
	// request, traces, metrics and logs, as OTLP/JSON lines; a request is
	// acknowledged only once its lines are written (RecordOptions). At most
	// one may be set.
	Record     io.Writer
	RecordPath string
	RecordOptions
	// Log receives one line per new refusal reason (rate-limited), naming
	// the client and what it sent; nil discards them.
	Log io.Writer
	// RetryAfter is the delay suggested to senders when the store is full.
	// HTTP rounds it up to whole seconds (Retry-After); gRPC sends it as
	// RetryInfo.
	RetryAfter time.Duration
	// QueueWait is how long a request may wait for room when the store's
	// queue is full before it is refused as busy; negative refuses at once.
	// Senders keep few requests in flight, so a wait slows them to what the
	// store takes instead of failing a burst.
	QueueWait time.Duration
}

func (c *Config) setDefaults() {
	if c.GRPCAddr == "" {
		c.GRPCAddr = DefaultGRPCAddr
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = DefaultHTTPAddr
	}
	if c.MaxRecvBytes <= 0 {
		c.MaxRecvBytes = DefaultMaxRecvBytes
	}
	if c.MaxDecompressed <= 0 {
		c.MaxDecompressed = DefaultMaxDecompressed
	}
	if c.BodyTimeout <= 0 {
		c.BodyTimeout = DefaultBodyTimeout
	}
	if c.MaxInflight <= 0 {
		c.MaxInflight = DefaultMaxInflight
	}
	if c.MemoryWait <= 0 {
		c.MemoryWait = DefaultMemoryWait
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = DefaultRetryAfter
	}
	if c.QueueWait == 0 {
		c.QueueWait = DefaultQueueWait
	}
}

// Server runs the OTLP/gRPC and OTLP/HTTP receivers in front of a
// model.Store. Start and Shutdown are called once each, from one goroutine;
// Addrs and Stats may be called from any goroutine after Start.
type Server struct {
	cfg   Config
	store *model.Store
	auth  authorizer
	// locals holds per-goroutine interner caches: a handler takes one for a
	// decode and puts it back, so the hot path interns without locking.
	locals sync.Pool

	mem *memBudget // bytes of requests in flight
	// grpcSize is what a gRPC call reserves before its message is read
	// (noteGRPCSize).
	grpcSize atomic.Int64
	hosts    hostGuard
	rec      *Recorder
	grpcSrv  *grpc.Server
	httpSrv  *http.Server
	grpcLn   net.Listener
	httpLn   net.Listener
	wg       sync.WaitGroup
	bodies   bodyReads // HTTP bodies being read, cut off at a stop
	// stopping is set once a stop's grace period is over: a gRPC message
	// that fails to arrive after it was cut off.
	stopping atomic.Bool
	// recordChanged is signalled when the record starts or stops failing.
	recordChanged chan struct{}

	serveMu  sync.Mutex
	serveErr error

	rejected      atomic.Int64 // spans the decoders refused
	recordRefused atomic.Int64 // spans refused because the record could not take them
	requests      atomic.Int64
	failed        atomic.Int64
	cutOff        atomic.Int64 // requests whose body a stop cut off
	profiles      atomic.Int64 // profiles received (counted, not stored)
	refused       *refusals
}

// Stats are the Server's own counters; the store counts the rest.
type Stats struct {
	Requests int64 // export requests answered, any signal
	Failed   int64 // requests answered with an error status
	Rejected int64 // spans the decoders refused (partial success)
	// RecordRefused counts spans refused as retryable because the record
	// could not take them: its writer stalled, or a write failed.
	RecordRefused int64
	// Recorded and RecordedSpans count what the record holds: requests and
	// spans written.
	Recorded, RecordedSpans int64
	// RecordFailures counts failed writes (a full disk); RecordFailing
	// says the latest one failed, RecordError why (kept after recovery).
	RecordFailures int64
	RecordFailing  bool
	RecordError    error
	// UnwrittenRequests and UnwrittenSpans wait for the record writer or
	// are in its hands; none is acknowledged.
	UnwrittenRequests, UnwrittenSpans int64
	// RequestsRefused counts requests refused whole, by reason (Reason*).
	RequestsRefused map[string]int64
	// CutOff counts requests whose body was still arriving when a stop
	// ended its grace period (also in RequestsRefused, as ReasonCutOff).
	CutOff int64
	// Profiles counts OTLP profiles received (accepted and counted, not
	// stored).
	Profiles int64
	// InflightBytes is the memory requests in flight hold now.
	InflightBytes int64
}

// NewServer checks cfg and returns a Server ready to Start. It refuses
// (ErrExposed) to listen beyond loopback without a token or Insecure.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("receiver: no store")
	}
	if cfg.Record != nil && cfg.RecordPath != "" {
		return nil, errors.New("receiver: both Record and RecordPath set")
	}
	cfg.setDefaults()
	var addrs []string
	for _, a := range []string{cfg.GRPCAddr, cfg.HTTPAddr} {
		if a != Off {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, errors.New("receiver: both transports are off")
	}
	if err := checkExposure(cfg.AuthToken, cfg.Insecure, addrs...); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, store: cfg.Store, auth: newAuthorizer(cfg.AuthToken), refused: newRefusals(cfg.Log),
		mem:           newMemBudget(cfg.MaxInflight),
		hosts:         newHostGuard(cfg.HTTPAddr, cfg.AllowHosts),
		recordChanged: make(chan struct{}, 1)}
	// Until requests tell, a call is taken to be a quarter of the bound:
	// a burst of large calls at start overshoots little, small ones bring
	// the reservation down within a few dozen calls.
	s.grpcSize.Store(max(int64(cfg.MaxRecvBytes)/4, minGRPCReserve))
	strs := cfg.Store.Interner()
	s.locals.New = func() any { return model.NewLocal(strs) }
	return s, nil
}

// ListenError is a listener that could not be bound: Transport ("OTLP/gRPC"
// or "OTLP/HTTP") at Addr. InUse reports the address taken by another
// socket.
type ListenError struct {
	Transport, Addr string
	Err             error
}

func (e *ListenError) Error() string {
	return fmt.Sprintf("listen for %s on %s: %v", e.Transport, e.Addr, e.Err)
}

func (e *ListenError) Unwrap() error { return e.Err }

// InUse reports whether another socket holds the address.
func (e *ListenError) InUse() bool { return errors.Is(e.Err, syscall.EADDRINUSE) }

// Start opens the record file, binds both listeners and serves in the
// background. On error nothing is left open.
func (s *Server) Start(ctx context.Context) error {
	var err error
	switch {
	case s.cfg.RecordPath != "":
		s.rec, err = OpenRecorder(s.cfg.RecordPath, s.cfg.RecordOptions)
	case s.cfg.Record != nil:
		s.rec = NewRecorder(s.cfg.Record, s.cfg.RecordOptions)
	}
	if err != nil {
		return err
	}
	if s.rec != nil {
		s.rec.OnChange(s.recordStateChanged)
	}
	var lc net.ListenConfig
	if s.cfg.GRPCAddr != Off {
		if s.grpcLn, err = lc.Listen(ctx, "tcp", s.cfg.GRPCAddr); err != nil {
			s.abort()
			return &ListenError{Transport: "OTLP/gRPC", Addr: s.cfg.GRPCAddr, Err: err}
		}
	}
	if s.cfg.HTTPAddr != Off {
		if s.httpLn, err = lc.Listen(ctx, "tcp", s.cfg.HTTPAddr); err != nil {
			s.abort()
			return &ListenError{Transport: "OTLP/HTTP", Addr: s.cfg.HTTPAddr, Err: err}
		}
	}
	if s.grpcLn != nil {
		s.grpcSrv = s.newGRPCServer()
		ln := newSniffListener(s.grpcLn, s)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.grpcSrv.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				s.setServeErr(fmt.Errorf("serve OTLP/gRPC: %w", err))
			}
		}()
	}
	if s.httpLn != nil {
		s.httpSrv = s.newHTTPServer()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.httpSrv.Serve(s.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.setServeErr(fmt.Errorf("serve OTLP/HTTP: %w", err))
			}
		}()
	}
	return nil
}

// recordStateChanged tells the store (for the TUI) and RecordChanged's
// reader that the record started or stopped failing.
func (s *Server) recordStateChanged() {
	s.store.SetRecordState(s.recordState())
	select {
	case s.recordChanged <- struct{}{}:
	default:
	}
}

func (s *Server) recordState() model.RecordState {
	st := model.RecordState{Refused: s.recordRefused.Load()}
	if s.rec != nil {
		st.Failures, st.Failing = s.rec.Failures(), s.rec.Failing()
		if err := s.rec.Err(); err != nil {
			st.Cause = RecordCause(err)
		}
	}
	return st
}

// abort closes what a failed Start opened.
func (s *Server) abort() {
	if s.grpcLn != nil {
		s.grpcLn.Close()
	}
	if s.rec != nil {
		s.rec.Close(context.Background())
	}
}

func (s *Server) setServeErr(err error) {
	s.serveMu.Lock()
	if s.serveErr == nil {
		s.serveErr = err
	}
	s.serveMu.Unlock()
}

// Addrs returns the bound addresses ("" for a transport that is off).
func (s *Server) Addrs() (grpcAddr, httpAddr string) {
	if s.grpcLn != nil {
		grpcAddr = s.grpcLn.Addr().String()
	}
	if s.httpLn != nil {
		httpAddr = s.httpLn.Addr().String()
	}
	return grpcAddr, httpAddr
}

// Stats returns the Server's counters.
func (s *Server) Stats() Stats {
	st := Stats{
		Requests:        s.requests.Load(),
		Failed:          s.failed.Load(),
		Rejected:        s.rejected.Load(),
		RecordRefused:   s.recordRefused.Load(),
		RequestsRefused: s.refused.snapshot(),
		CutOff:          s.cutOff.Load(),
		Profiles:        s.profiles.Load(),
		InflightBytes:   s.mem.inUse(),
	}
	if s.rec != nil {
		st.Recorded, st.RecordedSpans = s.rec.Written(), s.rec.WrittenSpans()
		st.RecordFailures, st.RecordFailing, st.RecordError = s.rec.Failures(), s.rec.Failing(), s.rec.Err()
		st.UnwrittenRequests, st.UnwrittenSpans = s.rec.Unwritten()
	}
	return st
}

// RecordChanged returns a channel signalled when the record starts or
// stops failing, or nil when not recording (a nil channel never fires).
func (s *Server) RecordChanged() <-chan struct{} {
	if s.rec == nil {
		return nil
	}
	return s.recordChanged
}

// Shutdown stops accepting requests and lets those in flight finish for
// Config.StopGrace; bodies still arriving then are cut off (and counted),
// and what is left is closed when ctx ends. It then closes the record:
// what is waiting for its writer is written, and the file is synced. Every
// span acknowledged is in the record before the first acknowledgement is
// sent, so a stop cut short loses none. It does not close the store.
func (s *Server) Shutdown(ctx context.Context) error {
	var errs []error
	grace := time.AfterFunc(DefaultStopGrace, func() {
		s.stopping.Store(true)
		s.bodies.cut()
	})
	defer grace.Stop()
	var inner sync.WaitGroup
	if s.grpcSrv != nil {
		inner.Add(1)
		go func() {
			defer inner.Done()
			done := make(chan struct{})
			go func() { s.grpcSrv.GracefulStop(); close(done) }()
			select {
			case <-done:
			case <-ctx.Done():
				s.stopping.Store(true)
				s.grpcSrv.Stop() // GracefulStop returns once Stop closed everything
				<-done
			}
		}()
	}
	if s.httpSrv != nil {
		if err := s.httpSrv.Shutdown(ctx); err != nil {
			// As for gRPC above: at the deadline what is left is closed.
			// A request cut so was never acknowledged (its sender
			// retries), so that is the bound at work, not a failure.
			s.stopping.Store(true)
			s.httpSrv.Close()
			if ctx.Err() == nil {
				errs = append(errs, fmt.Errorf("shut down OTLP/HTTP: %w", err))
			}
		}
	}
	inner.Wait()
	s.wg.Wait()
	if s.rec != nil {
		// The record gets a moment more than the receivers: what the last
		// requests handed it is written before they are answered.
		rctx, cancel := context.WithTimeout(context.Background(), recordCloseWait(ctx))
		err := s.rec.Close(rctx)
		cancel()
		if err != nil {
			errs = append(errs, err)
		}
	}
	s.serveMu.Lock()
	if s.serveErr != nil {
		errs = append(errs, s.serveErr)
	}
	s.serveMu.Unlock()
	return errors.Join(errs...)
}

// recordCloseWait is how long Shutdown waits for the record writer once
// the receivers stopped: what is left of ctx, and at least half a second.
func recordCloseWait(ctx context.Context) time.Duration {
	d := 500 * time.Millisecond
	if dl, ok := ctx.Deadline(); ok {
		d = max(d, time.Until(dl))
	}
	return d
}

// wireFormat is how a request body is encoded.
type wireFormat uint8

const (
	formatProto wireFormat = iota
	formatJSON
)

// inputError is a request the decoders could not read: the sender must not
// retry it (InvalidArgument, HTTP 400).
type inputError struct{ err error }

func (e *inputError) Error() string { return e.err.Error() }
func (e *inputError) Unwrap() error { return e.err }

// errMemoryFull means the requests in flight hold all of MaxInflight;
// like a full store it is retryable.
var errMemoryFull = errors.New("requests in flight fill the receiver's memory bound")

// exportResult is what a trace export answers on success.
type exportResult struct {
	rejected int64
	message  string
}

// linePool recycles record line buffers.
var linePool = sync.Pool{New: func() any { return new([]byte) }}

// exportTraces decodes one trace request and hands the spans to the record
// writer, when recording, and then to the store. It acknowledges only what
// both took: a request is answered OK once its lines are written (and
// synced, with Fsync), and a record that cannot take it (stalled, failing)
// refuses it as retryable before the store sees it, so the store holds
// only what the record holds. res is the request's share of the memory
// bound: it is set to what decoding and rendering measure. body is only
// borrowed.
func (s *Server) exportTraces(ctx context.Context, body []byte, f wireFormat, res *reservation) (exportResult, error) {
	l := s.locals.Get().(*model.Local)
	var (
		b   model.Batch
		rep Report
		err error
	)
	if f == formatJSON {
		b, rep, err = DecodeJSON(l, body, s.cfg.Limits)
	} else {
		b, rep, err = DecodeProto(l, body, s.cfg.Limits)
	}
	s.locals.Put(l)
	if err == nil && s.rec != nil {
		err = checkRecordable(body, f)
	}
	if err != nil {
		return exportResult{}, &inputError{err}
	}
	n := len(b.Spans)
	var res0 exportResult
	if rep.Rejected > 0 {
		res0 = exportResult{rejected: int64(rep.Rejected), message: rejectMessage(rep)}
	}
	held := int64(len(body)) + b.Bytes()
	res.setTo(max(res.held, held))
	if n > 0 && s.rec != nil {
		// A failing record refuses at once until its next try is due:
		// decoded only to count what it refuses.
		if err := s.rec.admit(); err != nil {
			s.recordRefused.Add(int64(n))
			s.store.SetRecordState(s.recordState())
			return exportResult{}, err
		}
		if err := s.record(ctx, recordItem{body: recordBody(body, f, rep), format: f, sig: signalTraces}, int64(n), held, res); err != nil {
			return exportResult{}, err
		}
	}
	if n > 0 {
		if err := s.store.SubmitWait(b, s.cfg.QueueWait); err != nil {
			return exportResult{}, err
		}
	}
	// Counted once accepted: a refused request is sent again.
	if c := rep.capped(); c != (model.Capped{}) {
		s.cfg.Store.CountCapped(c)
	}
	if rep.ValuesRepaired > 0 {
		s.cfg.Store.CountRepaired(int64(rep.ValuesRepaired))
	}
	if rep.Rejected > 0 {
		s.rejected.Add(int64(rep.Rejected))
	}
	return res0, nil
}

// record renders a request's lines and waits for the writer to write them;
// an error is the retryable refusal to answer. held is what the request
// holds besides its lines.
func (s *Server) record(ctx context.Context, it recordItem, spans, held int64, res *reservation) error {
	bp := linePool.Get().(*[]byte)
	lines, err := appendRecordLines((*bp)[:0], it)
	if err != nil {
		linePool.Put(bp)
		// The decoder took it but the record cannot hold it: sent again,
		// it would fail again.
		return &inputError{err}
	}
	res.setTo(held + int64(cap(lines)))
	err = s.rec.write(ctx, lines, spans)
	if err == nil || !errors.Is(err, errRecordStalled) {
		// The writer is done with the lines (a stalled one may still
		// read them).
		if cap(lines) <= maxPooled {
			*bp = lines[:0]
			linePool.Put(bp)
		}
	}
	if err != nil {
		s.recordRefused.Add(spans)
		s.store.SetRecordState(s.recordState())
	}
	return err
}

// recordBody is what the record gets of an accepted request: the body
// with the strings the decoder repaired repaired the same way, since the
// record must hold valid text and reopen as the store holds it.
func recordBody(body []byte, f wireFormat, rep Report) []byte {
	if rep.ValuesRepaired == 0 || f == formatProto {
		return body // the protobuf conversion repairs strings itself
	}
	return validJSONBody(body)
}

// rejectMessage is the one sentence partial_success carries.
func rejectMessage(rep Report) string {
	reason := rep.Reason
	if reason == "" {
		reason = "invalid span"
	}
	if rep.Rejected == 1 {
		return "1 span rejected: " + reason
	}
	return fmt.Sprintf("%d spans rejected (first: %s)", rep.Rejected, reason)
}

// signal is the kind of OTLP export.
type signal uint8

const (
	signalTraces signal = iota
	signalMetrics
	signalLogs
)

func (g signal) String() string {
	switch g {
	case signalMetrics:
		return "metrics"
	case signalLogs:
		return "logs"
	case signalProfiles:
		return "profiles"
	}
	return "traces"
}

// exportCounted counts the data points or log records of a metrics or logs
// request; they are counted, never stored. When recording, they are
// counted once written.
func (s *Server) exportCounted(ctx context.Context, g signal, body []byte, f wireFormat, res *reservation) error {
	var (
		n   int
		err error
	)
	byName := map[string]int64{}
	add := func(name []byte, points int) { byName[string(name)] += int64(points) }
	switch {
	case g == signalMetrics && f == formatJSON:
		n, err = MetricPointsByNameJSON(body, add)
	case g == signalMetrics:
		// Validate first, so a request refused as malformed counts nothing,
		// per name or in total; the walk is cheap and allocates nothing.
		if n, err = CountMetricPoints(body); err == nil {
			MetricPointsByName(body, add)
		}
	case f == formatJSON:
		n, err = CountLogRecordsJSON(body)
	default:
		n, err = CountLogRecords(body)
	}
	if err != nil {
		return &inputError{err}
	}
	if s.rec != nil {
		if err := s.rec.admit(); err != nil {
			return err
		}
		if err := s.record(ctx, recordItem{body: body, format: f, sig: g}, 0, int64(len(body)), res); err != nil {
			return err
		}
	}
	for name, points := range byName {
		s.store.CountMetric(name, points)
	}
	if g == signalMetrics {
		s.store.Count(int64(n), 0)
	} else {
		s.store.Count(0, int64(n))
	}
	return nil
}

// retryable reports whether err means "busy, try again": a full store,
// memory bound or record, a record that cannot write, or a receiver that
// is shutting down.
func retryable(err error) bool {
	var re *recordError
	return errors.Is(err, model.ErrFull) || errors.Is(err, model.ErrClosed) || errors.Is(err, errMemoryFull) ||
		errors.Is(err, errRecordStalled) || errors.Is(err, errRecordClosed) || errors.As(err, &re)
}

// busyMessage is what a retryable refusal tells the sender.
func busyMessage(err error) string {
	var re *recordError
	switch {
	case errors.Is(err, model.ErrClosed), errors.Is(err, errRecordClosed):
		return "receiver is shutting down; retry later"
	case errors.Is(err, errRecordStalled):
		return "the record (--record) writer is stalled (a full pipe or a hung disk); retry later"
	case errors.As(err, &re):
		return "the record (--record) cannot be written: " + RecordCause(re.err) + "; retry later"
	case errors.Is(err, errMemoryFull):
		return "requests in flight fill the receiver's memory bound; retry later"
	}
	return "span store queue is full; retry later"
}

// busyReason names a retryable refusal for the refusal counts.
func busyReason(err error) string {
	var re *recordError
	switch {
	case errors.Is(err, errRecordStalled):
		return ReasonRecordStalled
	case errors.As(err, &re):
		return ReasonRecordFailed
	}
	return ReasonBusy
}
