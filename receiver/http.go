package receiver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	if b != nil && b.Cap() <= maxPooled {
		b.Reset()
		bufPool.Put(b)
	}
}

// httpPaths maps the OTLP/HTTP paths to their signal.
var httpPaths = map[string]signal{
	"/v1/traces":  signalTraces,
	"/v1/metrics": signalMetrics,
	"/v1/logs":    signalLogs,
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
		return nil, &httpError{status: http.StatusNotFound, code: codes.NotFound, msg: fmt.Sprintf("no OTLP endpoint at %q: use /v1/traces, /v1/metrics or /v1/logs", r.URL.Path)}
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
	var held int64 // inflation budget the body holds until the request is done
	body, bufs, herr := s.readBody(w, r, &held)
	defer func() { s.inflight.release(held) }()
	for _, b := range bufs {
		defer putBuf(b)
	}
	if herr != nil {
		return nil, herr
	}
	switch sig {
	case signalMetrics, signalLogs:
		if err := s.exportCounted(sig, body, f); err != nil {
			return nil, s.httpFailure(err)
		}
		if sig == signalMetrics {
			return &colmetrics.ExportMetricsServiceResponse{}, nil
		}
		return &collogs.ExportLogsServiceResponse{}, nil
	}
	res, err := s.exportTraces(body, f)
	if err != nil {
		return nil, s.httpFailure(err)
	}
	resp := &coltrace.ExportTraceServiceResponse{}
	if res.rejected > 0 {
		resp.PartialSuccess = &coltrace.ExportTracePartialSuccess{RejectedSpans: res.rejected, ErrorMessage: res.message}
	}
	return resp, nil
}

// readBody reads the body within MaxRecvBytes and, when compressed,
// inflates it within MaxDecompressed. The body lives in pooled buffers,
// returned so the caller can give them back once done with the body, and
// an inflated body holds *held bytes of the inflation budget, which the
// caller releases then too.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, held *int64) (body []byte, bufs []*bytes.Buffer, herr *httpError) {
	enc := normEncoding(r.Header.Get("Content-Encoding"))
	inflate := httpEncodings[enc]
	if enc != "" && inflate == nil {
		return nil, bufs, &httpError{status: http.StatusUnsupportedMediaType, code: codes.InvalidArgument, reason: ReasonEncoding, msg: fmt.Sprintf("unsupported content encoding %q: use one of %s, or none", enc, encodingNames())}
	}
	limit := int64(s.cfg.MaxRecvBytes)
	if r.ContentLength > limit {
		return nil, bufs, tooLarge("request body", r.ContentLength, limit)
	}
	buf := bufPool.Get().(*bytes.Buffer)
	bufs = append(bufs, buf)
	// Room grows with the bytes that arrive, not with what Content-Length
	// promises: a declared 16 MB with nothing behind it would pin 16 MB per
	// connection. The read deadline frees a connection that stalls.
	if r.ContentLength > 0 {
		buf.Grow(int(min(r.ContentLength, initialBody)))
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
	// MaxBytesReader also closes the connection past the limit, so a huge
	// body is not read to the end just to be thrown away.
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit)); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return nil, bufs, tooLarge("request body", -1, limit)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, bufs, &httpError{status: http.StatusRequestTimeout, code: codes.DeadlineExceeded, reason: ReasonIncomplete, msg: fmt.Sprintf("request body not received within %s", s.cfg.BodyTimeout)}
		}
		// The sender went away mid-body: nothing wrong with what it sent.
		return nil, bufs, &httpError{status: http.StatusBadRequest, code: codes.InvalidArgument, reason: ReasonIncomplete, msg: "read request body: " + err.Error()}
	}
	if inflate == nil {
		return buf.Bytes(), bufs, nil
	}
	// Inflation takes its room from one budget, so a burst of decompression
	// bombs cannot each grow a buffer to the bound at once. It first takes
	// what a request of ordinary compression ratio needs; a body that
	// inflates past that waits for room up to the bound and is inflated
	// again (bombs pay, ordinary requests do not).
	dlimit := int64(s.cfg.MaxDecompressed)
	first := min(dlimit, max(4<<20, 32*int64(buf.Len())))
	ctx, cancel := context.WithTimeout(r.Context(), inflightWait)
	defer cancel()
	busy := &httpError{status: http.StatusServiceUnavailable, code: codes.Unavailable, retryAfter: s.cfg.RetryAfter,
		msg: "too many compressed requests being inflated; retry later"}
	if !s.inflight.acquire(ctx, first) {
		return nil, bufs, busy
	}
	out := bufPool.Get().(*bytes.Buffer)
	bufs = append(bufs, out)
	*held = first
	err := inflate(buf.Bytes(), out, first)
	if errors.Is(err, errTooLarge) && first < dlimit {
		// Give the first room back before waiting for the whole: holding
		// part while waiting for more would let a burst of bombs each
		// hold a part and all wait for ever.
		*out = bytes.Buffer{}
		s.inflight.release(first)
		*held = 0
		if !s.inflight.acquire(ctx, dlimit) {
			return nil, bufs, busy
		}
		*held = dlimit
		err = inflate(buf.Bytes(), out, dlimit)
	}
	if err != nil {
		return nil, bufs, inflateError(enc, err, dlimit)
	}
	return out.Bytes(), bufs, nil
}

func tooLarge(what string, got, limit int64) *httpError {
	msg := fmt.Sprintf("%s larger than the %d-byte limit", what, limit)
	if got >= 0 {
		msg = fmt.Sprintf("%s of %d bytes is larger than the %d-byte limit", what, got, limit)
	}
	return &httpError{status: http.StatusRequestEntityTooLarge, code: codes.ResourceExhausted, msg: msg}
}

// httpFailure maps an export failure to the OTLP/HTTP retryable split: 400
// for bad input (not retried), 503 with Retry-After when busy (retried).
func (s *Server) httpFailure(err error) *httpError {
	var in *inputError
	switch {
	case errors.As(err, &in):
		return &httpError{status: http.StatusBadRequest, code: codes.InvalidArgument, msg: in.Error()}
	case retryable(err):
		return &httpError{status: http.StatusServiceUnavailable, code: codes.Unavailable, msg: busyMessage(err), retryAfter: s.cfg.RetryAfter}
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
	case http.StatusServiceUnavailable:
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
