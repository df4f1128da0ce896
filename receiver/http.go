package receiver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	collogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"
)

// Media types OTLP/HTTP defines.
const (
	mediaProto = "application/x-protobuf"
	mediaJSON  = "application/json"
)

// bufPool recycles request body buffers; exportTraces only borrows them.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooled keeps one huge request from pinning its buffer forever.
const maxPooled = 4 << 20

func putBuf(b *bytes.Buffer) {
	switch {
	case b == nil:
	case b.Cap() <= maxPooled:
		b.Reset()
		bufPool.Put(b)
	default:
		putBoundBuf(b.Bytes()[:0])
		*b = bytes.Buffer{}
	}
}

// boundBufs holds, per size, buffers as large as a body's inflation bound
// (plus one byte): the room a body that inflates past the ordinary room
// gets at once. A sync.Pool each, so they go once bombs stop.
var boundBufs sync.Map // int → *sync.Pool of *[]byte

func getBoundBuf(size int) []byte {
	p, _ := boundBufs.LoadOrStore(size, new(sync.Pool))
	if b, ok := p.(*sync.Pool).Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, size)
}

// putBoundBuf keeps b if it has a bound's size; others go.
func putBoundBuf(b []byte) {
	if p, ok := boundBufs.Load(cap(b)); ok {
		p.(*sync.Pool).Put(&b)
	}
}

// httpPaths maps the OTLP/HTTP paths to their signal.
var httpPaths = map[string]signal{
	"/v1/traces":              signalTraces,
	"/v1/metrics":             signalMetrics,
	"/v1/logs":                signalLogs,
	"/v1development/profiles": signalProfiles,
}

func (s *Server) newHTTPServer() *http.Server {
	return &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
}

// httpError is a failed request: status, the google.rpc.Status code and a
// message for the sender.
type httpError struct {
	status     int
	code       codes.Code
	msg        string
	retryAfter time.Duration // for 503
	reason     string        // refusal reason when the status alone does not tell
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	f := formatJSON // errors before the content type is known are JSON: readable with curl
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && mt == mediaProto {
		f = formatProto
	}
	resp, herr := s.handleHTTP(w, r, f)
	if herr != nil {
		s.failed.Add(1)
		s.refuse(httpReason(herr), r.RemoteAddr, httpSent(r), herr.msg)
		writeHTTPError(w, f, herr)
		return
	}
	writeMessage(w, f, http.StatusOK, resp)
}

// handleHTTP checks one request in the order a sender can fix things: path,
// credentials, method, media type, encoding, size, then content.
func (s *Server) handleHTTP(w http.ResponseWriter, r *http.Request, f wireFormat) (proto.Message, *httpError) {
	if herr := s.hosts.check(r); herr != nil {
		return nil, herr
	}
	sig, ok := httpPaths[r.URL.Path]
	if !ok {
		return nil, &httpError{status: http.StatusNotFound, code: codes.NotFound, msg: fmt.Sprintf("no OTLP endpoint at %q: use /v1/traces, /v1/metrics, /v1/logs or /v1development/profiles", r.URL.Path)}
	}
	if !s.auth.allow(r.Header.Get("Authorization")) {
		return nil, &httpError{status: http.StatusUnauthorized, code: codes.Unauthenticated, msg: "missing or wrong bearer token in the Authorization header"}
	}
	if r.Method != http.MethodPost {
		return nil, &httpError{status: http.StatusMethodNotAllowed, code: codes.Unimplemented, msg: fmt.Sprintf("method %s not allowed on %s: use POST", r.Method, r.URL.Path)}
	}
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || (mt != mediaProto && mt != mediaJSON) {
		return nil, &httpError{status: http.StatusUnsupportedMediaType, code: codes.InvalidArgument, msg: fmt.Sprintf("unsupported content type %q: use %s or %s", ct, mediaProto, mediaJSON)}
	}
	res := &reservation{b: s.mem, wait: s.cfg.MemoryWait}
	defer res.release()
	body, bufs, herr := s.readBody(w, r, res)
	for _, b := range bufs {
		defer putBuf(b)
	}
	if herr != nil {
		return nil, herr
	}
	ctx := r.Context()
	switch sig {
	case signalProfiles:
		if err := s.exportProfiles(body, f); err != nil {
			return nil, s.httpFailure(err)
		}
		return &emptypb.Empty{}, nil // an ExportProfilesServiceResponse without partial success
	case signalMetrics, signalLogs:
		if err := s.exportCounted(ctx, sig, body, f, res); err != nil {
			return nil, s.httpFailure(err)
		}
		if sig == signalMetrics {
			return &colmetrics.ExportMetricsServiceResponse{}, nil
		}
		return &collogs.ExportLogsServiceResponse{}, nil
	}
	out, err := s.exportTraces(ctx, body, f, res)
	if err != nil {
		return nil, s.httpFailure(err)
	}
	resp := &coltrace.ExportTraceServiceResponse{}
	if out.rejected > 0 {
		resp.PartialSuccess = &coltrace.ExportTracePartialSuccess{RejectedSpans: out.rejected, ErrorMessage: out.message}
	}
	return resp, nil
}

// readBody reads the body within MaxRecvBytes and, when compressed,
// inflates it within MaxDecompressed, taking room in the memory bound
// (res) for the bytes it holds as they arrive, then for handling them:
// when the bound is full the read pauses, so senders queue for memory
// instead of each taking it, and a body declared and never sent holds
// only what arrived. The body lives in pooled buffers, returned so the
// caller can give them back once done with the body.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, res *reservation) (body []byte, bufs []*bytes.Buffer, herr *httpError) {
	enc := normEncoding(r.Header.Get("Content-Encoding"))
	inflate := httpEncodings[enc]
	if enc != "" && inflate == nil {
		return nil, bufs, &httpError{status: http.StatusUnsupportedMediaType, code: codes.InvalidArgument, reason: ReasonEncoding, msg: fmt.Sprintf("unsupported content encoding %q: use one of %s, or none", enc, encodingNames())}
	}
	limit := int64(s.cfg.MaxRecvBytes)
	if r.ContentLength > limit {
		return nil, bufs, tooLarge("request body", r.ContentLength, limit)
	}
	busy := &httpError{status: http.StatusServiceUnavailable, code: codes.Unavailable, retryAfter: s.cfg.RetryAfter, msg: busyMessage(errMemoryFull)}
	buf := bufPool.Get().(*bytes.Buffer)
	bufs = append(bufs, buf)
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
	read := s.bodies.add(rc)
	// MaxBytesReader also closes the connection past the limit, so a huge
	// body is not read to the end just to be thrown away.
	err := s.readInto(r.Context(), buf, http.MaxBytesReader(w, r.Body, limit), res)
	cut := s.bodies.done(read)
	if err != nil {
		var mb *http.MaxBytesError
		switch {
		case errors.Is(err, errMemoryFull):
			return nil, bufs, busy
		case errors.As(err, &mb):
			return nil, bufs, tooLarge("request body", -1, limit)
		case cut:
			s.cutOff.Add(1)
			return nil, bufs, &httpError{status: http.StatusServiceUnavailable, code: codes.Unavailable, reason: ReasonCutOff, retryAfter: s.cfg.RetryAfter,
				msg: "request body cut off: the receiver is stopping; retry later"}
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, bufs, &httpError{status: http.StatusRequestTimeout, code: codes.DeadlineExceeded, reason: ReasonIncomplete, msg: fmt.Sprintf("request body not received within %s", s.cfg.BodyTimeout)}
		}
		// The sender went away mid-body: nothing wrong with what it sent.
		return nil, bufs, &httpError{status: http.StatusBadRequest, code: codes.InvalidArgument, reason: ReasonIncomplete, msg: "read request body: " + err.Error()}
	}
	if inflate == nil {
		// Room to handle it (decode, record) before it is handled.
		if !res.growTo(r.Context(), handlingFactor*int64(buf.Len())) {
			return nil, bufs, busy
		}
		return buf.Bytes(), bufs, nil
	}
	// A body is first inflated into the room a request of ordinary
	// compression ratio needs; one that inflates past that (a bomb, mostly)
	// gives that room back, is checked against the bound, and only then
	// waits for room up to the bound and is inflated again: bombs pay in
	// time, ordinary requests do not pay at all.
	raw := int64(buf.Len())
	dlimit := int64(s.cfg.MaxDecompressed)
	first := min(dlimit, max(4<<20, 32*raw))
	if !res.growTo(r.Context(), raw+handlingFactor*first) {
		return nil, bufs, busy
	}
	out := bufPool.Get().(*bytes.Buffer)
	bufs = append(bufs, out)
	err = inflate(buf.Bytes(), out, first)
	if errors.Is(err, errTooLarge) && first < dlimit {
		// Checked against the bound first, keeping nothing: a bomb is
		// refused having cost time, not memory.
		*out = bytes.Buffer{}
		res.setTo(raw)
		if err = inflate(buf.Bytes(), nil, dlimit); err == nil {
			if !res.growTo(r.Context(), raw+handlingFactor*dlimit) {
				return nil, bufs, busy
			}
			// Room for the bound at once (grown by doubling, the
			// buffer would take half as much again in copies).
			*out = *bytes.NewBuffer(getBoundBuf(int(dlimit) + 1))
			err = inflate(buf.Bytes(), out, dlimit)
		}
	}
	if err != nil {
		return nil, bufs, inflateError(enc, err, dlimit)
	}
	res.setTo(raw + handlingFactor*int64(out.Len()))
	return out.Bytes(), bufs, nil
}

// readChunk is how much of a body is read per step: room in the memory
// bound is taken for each step before its bytes are read.
const readChunk = 256 << 10

// readInto reads src into buf, taking room in res for each chunk before
// reading it; errMemoryFull when the room did not come in time.
func (s *Server) readInto(ctx context.Context, buf *bytes.Buffer, src io.Reader, res *reservation) error {
	for {
		if buf.Available() < 1<<10 {
			buf.Grow(min(readChunk, max(buf.Cap(), initialBody)))
		}
		if !res.growTo(ctx, int64(buf.Cap())) {
			return errMemoryFull
		}
		n, err := src.Read(buf.AvailableBuffer()[:buf.Available()])
		buf.Write(buf.AvailableBuffer()[:n])
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func tooLarge(what string, got, limit int64) *httpError {
	msg := fmt.Sprintf("%s larger than the %d-byte limit", what, limit)
	if got >= 0 {
		msg = fmt.Sprintf("%s of %d bytes is larger than the %d-byte limit", what, got, limit)
	}
	return &httpError{status: http.StatusRequestEntityTooLarge, code: codes.ResourceExhausted, msg: msg}
}

// httpFailure maps an export failure to the OTLP/HTTP retryable split: 400
// for bad input (not retried), 503 with Retry-After when busy, 429 when the
// record writer is stalled (both retried).
func (s *Server) httpFailure(err error) *httpError {
	var in *inputError
	switch {
	case errors.As(err, &in):
		return &httpError{status: http.StatusBadRequest, code: codes.InvalidArgument, msg: in.Error()}
	case errors.Is(err, errRecordStalled):
		return &httpError{status: http.StatusTooManyRequests, code: codes.Unavailable, msg: busyMessage(err), retryAfter: s.cfg.RetryAfter, reason: ReasonRecordStalled}
	case retryable(err):
		return &httpError{status: http.StatusServiceUnavailable, code: codes.Unavailable, msg: busyMessage(err), retryAfter: s.cfg.RetryAfter, reason: busyReason(err)}
	}
	return &httpError{status: http.StatusInternalServerError, code: codes.Internal, msg: err.Error()}
}

// retryAfterSeconds rounds d up to the whole seconds Retry-After allows.
func retryAfterSeconds(d time.Duration) int {
	n := int((d + time.Second - 1) / time.Second)
	if n < 1 {
		n = 1
	}
	return n
}

// writeHTTPError answers with a google.rpc.Status body in the request's
// format, as the OTLP/HTTP spec asks, plus the headers some codes need.
func writeHTTPError(w http.ResponseWriter, f wireFormat, e *httpError) {
	switch e.status {
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", http.MethodPost)
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(e.retryAfter)))
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	writeMessage(w, f, e.status, &spb.Status{Code: int32(e.code), Message: e.msg})
}

func writeMessage(w http.ResponseWriter, f wireFormat, code int, m proto.Message) {
	var (
		b   []byte
		err error
	)
	if f == formatProto {
		w.Header().Set("Content-Type", mediaProto)
		b, err = proto.Marshal(m)
	} else {
		w.Header().Set("Content-Type", mediaJSON)
		b, err = protojson.Marshal(m)
	}
	if err != nil {
		http.Error(w, "encode response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	w.Write(b)
}
