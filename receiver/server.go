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
	"time"

	"github.com/nemo-gym/gymtrace/model"
	"google.golang.org/grpc"
)

// Defaults for Config fields left zero.
const (
	DefaultGRPCAddr        = "127.0.0.1:4317"
	DefaultHTTPAddr        = "127.0.0.1:4318"
	DefaultMaxRecvBytes    = 16 << 20
	DefaultMaxDecompressed = 64 << 20
	DefaultRecordQueue     = 1024
	DefaultRetryAfter      = time.Second
	DefaultQueueWait       = time.Second
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
	// MaxRecvBytes bounds one request as sent: the gRPC message and the HTTP
	// body. gRPC also applies it to the decompressed message.
	MaxRecvBytes int
	// MaxDecompressed bounds an HTTP body after gzip decompression, so a
	// small compressed body cannot expand without limit.
	MaxDecompressed int
	// AllowHosts are host names, besides loopback ones, that requests to a
	// loopback HTTP listener may name in Host and Origin.
	AllowHosts []string
	// BodyTimeout bounds reading one HTTP request body.
	BodyTimeout time.Duration
	// MaxInflight bounds the decompressed bytes of HTTP bodies being
	// inflated at once; each compressed request reserves MaxDecompressed.
	MaxInflight int64
	// Limits bound what the decoders keep of one span.
	Limits Limits
	// Record, or RecordPath (opened for appending), receives every accepted
	// request, traces, metrics and logs, as OTLP/JSON lines. At most one may
	// be set.
	Record     io.Writer
	RecordPath string
	// RecordQueue is how many requests may wait for the record writer.
	RecordQueue int
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
		c.MaxInflight = 2 * int64(c.MaxDecompressed)
	}
	if c.RecordQueue <= 0 {
		c.RecordQueue = DefaultRecordQueue
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

	inflight *byteBudget // decompressed HTTP bytes in flight
	hosts    hostGuard
	rec      *Recorder
	grpcSrv  *grpc.Server
	httpSrv  *http.Server
	grpcLn   net.Listener
	httpLn   net.Listener
	wg       sync.WaitGroup

	serveMu  sync.Mutex
	serveErr error

	rejected      atomic.Int64 // spans the decoders refused
	recordRefused atomic.Int64 // spans refused because the record queue was full (not broken)
	requests      atomic.Int64
	failed        atomic.Int64
	refused       *refusals
}

// Stats are the Server's own counters; the store counts the rest.
type Stats struct {
	Requests      int64 // export requests answered, any signal
	Failed        int64 // requests answered with an error status
	Rejected      int64 // spans the decoders refused (partial success)
	RecordRefused int64 // spans refused because the record queue was full
	Recorded      int64 // requests written to the record
	// RequestsRefused counts requests refused whole, by reason (Reason*).
	RequestsRefused map[string]int64
	// RecordLost counts acknowledged spans the record will not hold (a
	// write failed); RecordError says why. The live store has them.
	RecordLost  int64
	RecordError error
	// UnwrittenRequests and UnwrittenSpans are acknowledged but not yet
	// handed to the OS by the record writer.
	UnwrittenRequests, UnwrittenSpans int64
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
		inflight: newByteBudget(cfg.MaxInflight),
		hosts:    newHostGuard(cfg.HTTPAddr, cfg.AllowHosts)}
	strs := cfg.Store.Interner()
	s.locals.New = func() any { return model.NewLocal(strs) }
	return s, nil
}

// Start opens the record file, binds both listeners and serves in the
// background. On error nothing is left open.
func (s *Server) Start(ctx context.Context) error {
	var err error
	switch {
	case s.cfg.RecordPath != "":
		s.rec, err = OpenRecorder(s.cfg.RecordPath, s.cfg.RecordQueue)
	case s.cfg.Record != nil:
		s.rec = NewRecorder(s.cfg.Record, s.cfg.RecordQueue)
	}
	if err != nil {
		return err
	}
	if s.rec != nil {
		s.rec.OnLost(s.store.CountNotRecorded)
	}
	var lc net.ListenConfig
	if s.cfg.GRPCAddr != Off {
		if s.grpcLn, err = lc.Listen(ctx, "tcp", s.cfg.GRPCAddr); err != nil {
			s.abort()
			return fmt.Errorf("listen for OTLP/gRPC on %s: %w", s.cfg.GRPCAddr, err)
		}
	}
	if s.cfg.HTTPAddr != Off {
		if s.httpLn, err = lc.Listen(ctx, "tcp", s.cfg.HTTPAddr); err != nil {
			s.abort()
			return fmt.Errorf("listen for OTLP/HTTP on %s: %w", s.cfg.HTTPAddr, err)
		}
	}
	if s.grpcLn != nil {
		s.grpcSrv = s.newGRPCServer()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.grpcSrv.Serve(s.grpcLn); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
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

// abort closes what a failed Start opened.
func (s *Server) abort() {
	if s.grpcLn != nil {
		s.grpcLn.Close()
	}
	if s.rec != nil {
		s.rec.Close()
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
	}
	if s.rec != nil {
		st.Recorded = s.rec.Written()
		st.RecordLost = s.rec.Lost()
		st.RecordError = s.rec.Err()
		st.UnwrittenRequests, st.UnwrittenSpans = s.rec.Unwritten()
	}
	return st
}

// RecordFailed returns a channel closed when a record write fails, or nil
// when not recording (a nil channel never fires).
func (s *Server) RecordFailed() <-chan struct{} {
	if s.rec == nil {
		return nil
	}
	return s.rec.Failed()
}

// Shutdown stops accepting requests, lets in-flight ones finish (until ctx
// ends, then cuts them), waits for the serving goroutines, and then flushes
// and syncs the record so every acknowledged span is on disk. It does not
// close the store.
func (s *Server) Shutdown(ctx context.Context) error {
	var errs []error
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
				s.grpcSrv.Stop() // GracefulStop returns once Stop closed everything
				<-done
			}
		}()
	}
	if s.httpSrv != nil {
		if err := s.httpSrv.Shutdown(ctx); err != nil {
			s.httpSrv.Close()
			errs = append(errs, fmt.Errorf("shut down OTLP/HTTP: %w", err))
		}
	}
	inner.Wait()
	s.wg.Wait()
	if s.rec != nil {
		if err := s.rec.Close(); err != nil {
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

// errRecordFull means the record writer is behind; like a full store it is
// retryable.
var errRecordFull = errors.New("record queue is full")

// exportResult is what a trace export answers on success.
type exportResult struct {
	rejected int64
	message  string
}

// exportTraces decodes one trace request and hands the spans to the store
// and, when recording, to the record writer. It acknowledges only what both
// took: a record slot is reserved before the store submit and released if
// the store refuses, so an acknowledged span is always recorded. body is
// only borrowed: the record writer gets its own copy.
func (s *Server) exportTraces(body []byte, f wireFormat) (exportResult, error) {
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
	var res exportResult
	if c := rep.capped(); c != (model.Capped{}) {
		s.cfg.Store.CountCapped(c)
	}
	if rep.ValuesRepaired > 0 {
		s.cfg.Store.CountRepaired(int64(rep.ValuesRepaired))
	}
	body = recordBody(body, f, rep)
	if rep.Rejected > 0 {
		s.rejected.Add(int64(rep.Rejected))
		res = exportResult{rejected: int64(rep.Rejected), message: rejectMessage(rep)}
	}
	n := len(b.Spans)
	if n == 0 {
		return res, nil
	}
	if s.rec != nil && !s.rec.reserve() {
		s.recordRefused.Add(int64(n))
		return exportResult{}, errRecordFull
	}
	if err := s.store.SubmitWait(b, s.cfg.QueueWait); err != nil {
		if s.rec != nil {
			s.rec.release()
		}
		return exportResult{}, err
	}
	if s.rec != nil {
		s.rec.push(body, f, n)
	}
	return res, nil
}

// recordBody is what the record gets of an accepted request: the body
// with the strings the decoder repaired repaired the same way, since the
// record must hold valid text and reopen as the store holds it.
func recordBody(body []byte, f wireFormat, rep Report) []byte {
	if rep.ValuesRepaired == 0 {
		return body
	}
	if f == formatJSON {
		return validJSONBody(body)
	}
	return repairProtoStrings(body)
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
	}
	return "traces"
}

// exportCounted counts the data points or log records of a metrics or logs
// request; they are counted, never stored.
func (s *Server) exportCounted(g signal, body []byte, f wireFormat) error {
	var (
		n   int
		err error
	)
	// Reserve the record slot first: a request refused as busy must count
	// nothing, since the sender will send it again.
	if s.rec != nil && !s.rec.reserve() {
		return errRecordFull
	}
	byName := func(name []byte, points int) { s.store.CountMetric(string(name), int64(points)) }
	switch {
	case g == signalMetrics && f == formatJSON:
		n, err = MetricPointsByNameJSON(body, byName)
	case g == signalMetrics:
		// Validate first, so a request refused as malformed counts nothing,
		// per name or in total; the walk is cheap and allocates nothing.
		if n, err = CountMetricPoints(body); err == nil {
			MetricPointsByName(body, byName)
		}
	case f == formatJSON:
		n, err = CountLogRecordsJSON(body)
	default:
		n, err = CountLogRecords(body)
	}
	if err != nil {
		if s.rec != nil {
			s.rec.release()
		}
		return &inputError{err}
	}
	if g == signalMetrics {
		s.store.Count(int64(n), 0)
	} else {
		s.store.Count(0, int64(n))
	}
	if s.rec != nil {
		s.rec.pushSignal(body, f, g, 0)
	}
	return nil
}

// retryable reports whether err means "busy, try again": a full store or
// record queue, or a store that is shutting down.
func retryable(err error) bool {
	return errors.Is(err, model.ErrFull) || errors.Is(err, model.ErrClosed) || errors.Is(err, errRecordFull)
}

// busyMessage is what a retryable refusal tells the sender.
func busyMessage(err error) string {
	switch {
	case errors.Is(err, model.ErrClosed):
		return "receiver is shutting down; retry later"
	case errors.Is(err, errRecordFull):
		return "record queue is full; retry later"
	}
	return "span store queue is full; retry later"
}
