package receiver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/stats"
)

// Reasons a whole request is refused, as counted in Stats.RequestsRefused
// and the serve summary's requests_refused. The names are a stable contract.
const (
	ReasonEncoding    = "unsupported_encoding"     // Content-Encoding or grpc-encoding not accepted
	ReasonContentType = "unsupported_content_type" // neither protobuf nor JSON
	ReasonPath        = "unknown_path"             // not /v1/traces, /v1/metrics, /v1/logs
	ReasonMethod      = "method_not_allowed"       // not POST
	ReasonAuth        = "unauthenticated"          // missing or wrong bearer token
	ReasonTooLarge    = "too_large"                // over the size bounds
	ReasonMalformed   = "malformed"                // undecodable body
	ReasonIncomplete  = "incomplete_body"          // the body stalled past the body timeout or the client went away
	ReasonBusy        = "busy"                     // store queue or memory bound full, or shutting down: retryable
	ReasonInternal    = "internal"
	// ReasonRecordStalled and ReasonRecordFailed are retryable refusals
	// the record (--record) caused: its writer did not write in time (a
	// full pipe, a hung disk), or a write failed (a full disk).
	ReasonRecordStalled = "record_stalled"
	ReasonRecordFailed  = "record_failed"
	// ReasonCutOff is a body still arriving when a stop ended its grace.
	ReasonCutOff = "cut_off_at_stop"
	// ReasonWrongPort is OTLP/HTTP sent to the gRPC port.
	ReasonWrongPort = "http_on_grpc_port"
)

// refusalLogEvery is how often one reason may log again after its first line.
const refusalLogEvery = time.Minute

// refusals counts refused requests by reason and logs each reason's first
// refusal at once, later ones at most once per refusalLogEvery with the
// count since, so a sender stuck on one mistake does not flood the log.
type refusals struct {
	mu      sync.Mutex
	log     io.Writer
	now     func() time.Time
	counts  map[string]int64
	logged  map[string]time.Time
	pending map[string]int64 // refusals since the reason's last line
}

func newRefusals(log io.Writer) *refusals {
	if log == nil {
		log = io.Discard
	}
	return &refusals{log: log, now: time.Now, counts: map[string]int64{}, logged: map[string]time.Time{}, pending: map[string]int64{}}
}

// add counts one refused request; from is the client's address, sent what
// it sent (transport, path, types, encoding), msg the answer it got.
func (r *refusals) add(reason, from, sent, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[reason]++
	r.pending[reason]++
	now := r.now()
	last, seen := r.logged[reason]
	if seen && now.Sub(last) < refusalLogEvery {
		return
	}
	n := r.pending[reason]
	r.pending[reason] = 0
	r.logged[reason] = now
	more := ""
	if n > 1 {
		more = fmt.Sprintf(" (%d refused for this reason since the last report)", n)
	}
	fmt.Fprintf(r.log, "gymtrace: refused request from %s: %s: %s: %s%s\n", from, reason, sent, msg, more)
}

// snapshot copies the counts.
func (r *refusals) snapshot() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int64, len(r.counts))
	for k, v := range r.counts {
		out[k] = v
	}
	return out
}

// FormatRefusals renders counts by reason as "reason=N, ..." sorted by
// count, largest first.
func FormatRefusals(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// refuse counts a refused request with the store too, for the TUI header.
func (s *Server) refuse(reason, from, sent, msg string) {
	s.refused.add(reason, from, sent, msg)
	s.store.CountRefusedRequest(reason)
}

// httpReason names the reason behind an HTTP refusal.
func httpReason(e *httpError) string {
	if e.reason != "" {
		return e.reason
	}
	switch e.status {
	case http.StatusNotFound:
		return ReasonPath
	case http.StatusUnauthorized:
		return ReasonAuth
	case http.StatusForbidden:
		return ReasonForeignHost
	case http.StatusMethodNotAllowed:
		return ReasonMethod
	case http.StatusUnsupportedMediaType:
		return ReasonContentType
	case http.StatusRequestEntityTooLarge:
		return ReasonTooLarge
	case http.StatusBadRequest:
		return ReasonMalformed
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		return ReasonBusy
	}
	return ReasonInternal
}

// httpSent describes a refused HTTP request for the log.
func httpSent(r *http.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", r.Method, r.URL.Path)
	if ct := r.Header.Get("Content-Type"); ct != "" {
		fmt.Fprintf(&b, " content-type %q", ct)
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "" {
		fmt.Fprintf(&b, " content-encoding %q", ce)
	}
	if r.ContentLength >= 0 {
		fmt.Fprintf(&b, " %d bytes", r.ContentLength)
	}
	if ua := r.Header.Get("User-Agent"); ua != "" {
		fmt.Fprintf(&b, " user-agent %q", ua)
	}
	return b.String()
}

// grpcReason names the reason behind a gRPC refusal.
func grpcReason(c codes.Code) string {
	switch c {
	case codes.Unauthenticated:
		return ReasonAuth
	case codes.InvalidArgument:
		return ReasonMalformed
	case codes.ResourceExhausted:
		return ReasonTooLarge
	case codes.Unavailable:
		return ReasonBusy
	case codes.Unimplemented:
		return ReasonEncoding
	}
	return ReasonInternal
}

// grpcEncodingWatch sees requests whose grpc-encoding has no decompressor:
// gRPC refuses them (Unimplemented) before any handler runs, so only a
// stats handler can count them.
type grpcEncodingWatch struct{ s *Server }

func (grpcEncodingWatch) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return ctx
}

func (w grpcEncodingWatch) HandleRPC(_ context.Context, st stats.RPCStats) {
	h, ok := st.(*stats.InHeader)
	if !ok || h.IsClient() || h.Compression == "" || h.Compression == "identity" {
		return
	}
	if encoding.GetCompressor(h.Compression) != nil {
		return
	}
	w.s.requests.Add(1)
	w.s.failed.Add(1)
	from := "unknown"
	if h.RemoteAddr != nil {
		from = h.RemoteAddr.String()
	}
	w.s.refuse(ReasonEncoding, from, fmt.Sprintf("grpc %s grpc-encoding %q", h.FullMethod, h.Compression),
		"no decompressor for it: use gzip, zstd, snappy or deflate")
}

func (grpcEncodingWatch) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}

func (grpcEncodingWatch) HandleConn(context.Context, stats.ConnStats) {}
