// Command gymload makes and sends load shaped like a real NeMo Gym job, for
// the ingest benchmarks (scripts/bench-ingest.sh).
//
//	gymload req -o FILE [-spans 512]      one ExportTraceServiceRequest of Gym-shaped spans
//	gymload blast -addr HOST:PORT [-http] [-in FILE] [-conc 4] [-dur 10s] [-spans N]
//
// blast takes the flags of the yardstick's `limit blast` and prints the same
// BLAST line, so ingest.sh can drive it: it re-sends one pre-encoded request
// with fresh trace and span ids (parent links kept), -conc requests in
// flight, over OTLP/gRPC or, with -http, OTLP/HTTP protobuf (POST /v1/traces).
//
// A Gym rollout trace, as the OpenTelemetry Python SDK exports it: the
// agent's SERVER span for POST /run with the 13 old-semconv attributes of the
// ASGI instrumentation, its `http receive|send` children with
// asgi.event.type, gym.* spans, CLIENT spans `HTTP POST` (new semconv) over
// aiohttp's `POST` (old semconv), and the SERVER spans they reach on the
// model and resources servers. Each process exports its own spans, children
// before parents. Values repeat across spans as in a real run; peer ports
// come from a small pool as pooled connections make them.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	resource "go.opentelemetry.io/proto/otlp/resource/v1"
	tr "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

func main() {
	log.SetFlags(0)
	if len(os.Args) < 2 {
		log.Fatal("usage: gymload req|blast [flags]")
	}
	switch os.Args[1] {
	case "req":
		cmdReq(os.Args[2:])
	case "blast":
		cmdBlast(os.Args[2:])
	default:
		log.Fatalf("gymload: unknown command %q (req or blast)", os.Args[1])
	}
}

func cmdReq(args []string) {
	fs := flag.NewFlagSet("req", flag.ExitOnError)
	out := fs.String("o", "", "output file")
	spans := fs.Int("spans", 512, "spans in the request (whole rollouts, at least this many)")
	seed := fs.Uint64("seed", 1, "random seed")
	_ = fs.Parse(args)
	if *out == "" {
		log.Fatal("req: -o FILE is required")
	}
	req := GymRequest(*spans, *seed)
	b, err := proto.Marshal(req)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		log.Fatal(err)
	}
	n := 0
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			n += len(ss.Spans)
		}
	}
	fmt.Printf("REQ file=%s spans=%d bytes=%d bytes_per_span=%.0f\n", *out, n, len(b), float64(len(b))/float64(n))
}

// service is one Gym server process: its resource and the spans it exports.
type service struct {
	name, typ string
	port      int
	pid       int
	spans     []*tr.Span
}

func str(k, v string) *common.KeyValue {
	return &common.KeyValue{Key: k, Value: &common.AnyValue{Value: &common.AnyValue_StringValue{StringValue: v}}}
}

func num(k string, v int64) *common.KeyValue {
	return &common.KeyValue{Key: k, Value: &common.AnyValue{Value: &common.AnyValue_IntValue{IntValue: v}}}
}

func (s *service) resource() *resource.Resource {
	return &resource.Resource{Attributes: []*common.KeyValue{
		str("telemetry.sdk.language", "python"), str("telemetry.sdk.name", "opentelemetry"),
		str("telemetry.sdk.version", "1.44.0"), str("service.instance.id", "rg4112e4021c-rank0"),
		str("service.name", "nemo-gym/"+s.name), str("service.version", "0.2.0"),
		num("dl.rank", 0), num("dl.world_size", 1), str("nemo.run.id", "rg4112e4021c"),
		str("nemo.gym.version", "0.5.1"), str("nemo.gym.server.name", s.name),
		str("nemo.gym.server.type", s.typ), str("nemo.gym.service_group", "nemo-gym"),
		str("host.name", "vm"), num("process.pid", int64(s.pid)),
	}}
}

// gen builds rollout traces span by span.
type gen struct {
	rng   *rand.Rand
	now   uint64 // ns
	trace []byte
}

func (g *gen) id(n int) []byte {
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], g.rng.Uint64()|1)
	}
	return b
}

// span adds a span of svc under parent lasting d, started at g.now; the
// caller adds it to the service once its children are in (children first).
func (g *gen) span(name string, kind tr.Span_SpanKind, parent *tr.Span, d time.Duration, attrs ...*common.KeyValue) *tr.Span {
	sp := &tr.Span{
		TraceId: g.trace, SpanId: g.id(8), Name: name, Kind: kind,
		StartTimeUnixNano: g.now, EndTimeUnixNano: g.now + uint64(d), Attributes: attrs,
		Status: &tr.Status{},
	}
	if parent != nil {
		sp.ParentSpanId = parent.SpanId
	}
	g.now += uint64(d / 8)
	return sp
}

// server adds the SERVER span svc makes for a request to route, its ASGI
// receive/send children and, inside it, whatever body adds.
func (g *gen) server(svc *service, parent *tr.Span, method, route, ua string, body func(srv *tr.Span)) {
	host := "127.0.0.1:" + strconv.Itoa(svc.port)
	name := method + " " + route
	srv := g.span(name, tr.Span_SPAN_KIND_SERVER, parent, 40*time.Millisecond,
		str("http.scheme", "http"), str("http.host", host), num("net.host.port", int64(svc.port)),
		str("http.flavor", "1.1"), str("http.target", route), str("http.url", "http://"+host+route),
		str("http.method", method), str("http.server_name", host), str("http.user_agent", ua),
		str("net.peer.ip", "127.0.0.1"), num("net.peer.port", int64(40000+g.rng.IntN(32))),
		str("http.route", route), num("http.status_code", 200))
	svc.spans = append(svc.spans, g.span(name+" http receive", tr.Span_SPAN_KIND_INTERNAL, srv, 50*time.Microsecond,
		str("asgi.event.type", "http.request")))
	if body != nil {
		body(srv)
	}
	svc.spans = append(svc.spans,
		g.span(name+" http send", tr.Span_SPAN_KIND_INTERNAL, srv, 90*time.Microsecond,
			str("asgi.event.type", "http.response.start"), num("http.status_code", 200)),
		g.span(name+" http send", tr.Span_SPAN_KIND_INTERNAL, srv, 40*time.Microsecond,
			str("asgi.event.type", "http.response.body")),
		g.span(name+" http send", tr.Span_SPAN_KIND_INTERNAL, srv, 30*time.Microsecond,
			str("asgi.event.type", "http.response.body")))
	svc.spans = append(svc.spans, srv)
}

// call adds from's CLIENT spans for POST route on to, and to's server side.
func (g *gen) call(from, to *service, parent *tr.Span, route string, body func(srv *tr.Span)) {
	u := "http://127.0.0.1:" + strconv.Itoa(to.port) + route
	cl := g.span("HTTP POST", tr.Span_SPAN_KIND_CLIENT, parent, 30*time.Millisecond,
		str("http.request.method", "POST"), str("url.full", u), num("http.response.status_code", 200))
	raw := g.span("POST", tr.Span_SPAN_KIND_CLIENT, cl, 29*time.Millisecond,
		str("http.method", "POST"), str("http.url", u), num("http.status_code", 200))
	g.server(to, raw, "POST", route, "Python/3.11 aiohttp/3.8.4", body)
	from.spans = append(from.spans, raw, cl)
}

func (g *gen) internal(svc *service, name string, parent *tr.Span, body func(sp *tr.Span)) {
	sp := g.span(name, tr.Span_SPAN_KIND_INTERNAL, parent, 20*time.Millisecond, str("nemo.gym.server.name", svc.name))
	if body != nil {
		body(sp)
	}
	svc.spans = append(svc.spans, sp)
}

// GymRequest returns one export request holding whole rollout traces, at
// least spans spans, one ResourceSpans per Gym server process.
func GymRequest(spans int, seed uint64) *coltrace.ExportTraceServiceRequest {
	g := &gen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), now: uint64(time.Date(2026, 12, 1, 13, 45, 0, 0, time.UTC).UnixNano())}
	driver := &service{name: "ng_run", typ: "driver", port: 0, pid: 4240}
	agent := &service{name: "simple_agent", typ: "responses_api_agents", port: 33141, pid: 4250}
	model := &service{name: "policy_model", typ: "responses_api_models", port: 41227, pid: 4253}
	res := &service{name: "code_gen", typ: "resources_servers", port: 48647, pid: 4256}
	svcs := []*service{driver, agent, model, res}
	total := func() int {
		n := 0
		for _, s := range svcs {
			n += len(s.spans)
		}
		return n
	}
	for total() < spans {
		g.trace = g.id(16)
		root := g.span("HTTP POST", tr.Span_SPAN_KIND_CLIENT, nil, 2*time.Second,
			str("http.request.method", "POST"), str("url.full", "http://127.0.0.1:33141/run"), num("http.response.status_code", 200))
		g.server(agent, root, "POST", "/run", "Python/3.11 aiohttp/3.8.4", func(run *tr.Span) {
			g.internal(agent, "gym.rollout", run, func(ro *tr.Span) {
				g.call(agent, res, ro, "/seed_session", nil)
				g.call(agent, agent, ro, "/v1/responses", func(ar *tr.Span) {
					g.internal(agent, "gym.agent.responses", ar, func(resp *tr.Span) {
						turns := 2 + g.rng.IntN(3)
						for t := 0; t < turns; t++ {
							g.call(agent, model, resp, "/v1/responses", func(mr *tr.Span) {
								g.internal(model, "gym.model.responses", mr, nil)
							})
							if t < turns-1 {
								g.call(agent, res, resp, "/run_code", func(rc *tr.Span) {
									g.internal(res, "gym.sandbox.exec", rc, nil)
								})
							}
						}
					})
				})
				g.call(agent, res, ro, "/verify", func(v *tr.Span) {
					g.internal(res, "gym.verify", v, nil)
				})
			})
		})
		driver.spans = append(driver.spans, root)
	}
	req := &coltrace.ExportTraceServiceRequest{}
	for _, s := range svcs {
		if len(s.spans) == 0 {
			continue
		}
		req.ResourceSpans = append(req.ResourceSpans, &tr.ResourceSpans{
			Resource: s.resource(),
			ScopeSpans: []*tr.ScopeSpans{{
				Scope: &common.InstrumentationScope{Name: "opentelemetry.instrumentation.asgi", Version: "0.65b0"},
				Spans: s.spans,
			}},
		})
	}
	return req
}

// rawCodec sends pre-encoded bytes as the "proto" codec and drops replies.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error)      { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error { return nil }
func (rawCodec) Name() string                       { return "proto" }

// idPatcher gives every re-sent copy fresh trace and span ids: it XORs a
// per-request key into every occurrence of every id, parent ids included,
// so links inside the request stay intact.
type idPatcher struct{ offs []int }

func newIDPatcher(b []byte) (idPatcher, int) {
	var r coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &r); err != nil {
		log.Fatalf("blast: request does not decode: %v", err)
	}
	ids := map[string]bool{}
	n := 0
	for _, rs := range r.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				ids[string(sp.TraceId)] = true
				ids[string(sp.SpanId)] = true
				n++
			}
		}
	}
	var p idPatcher
	for id := range ids {
		if len(id) < 8 {
			continue
		}
		for i := 0; ; {
			j := bytes.Index(b[i:], []byte(id))
			if j < 0 {
				break
			}
			p.offs = append(p.offs, i+j)
			i += j + len(id)
		}
	}
	return p, n
}

func (p idPatcher) apply(dst, src []byte, k uint64) {
	copy(dst, src)
	k += 0x9e3779b97f4a7c15
	k = (k ^ (k >> 30)) * 0xbf58476d1ce4e5b9
	k = (k ^ (k >> 27)) * 0x94d049bb133111eb
	k ^= k >> 31
	for _, o := range p.offs {
		binary.LittleEndian.PutUint64(dst[o:], binary.LittleEndian.Uint64(src[o:])^k)
	}
}

func cmdBlast(args []string) {
	fs := flag.NewFlagSet("blast", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:4317", "receiver address (loopback only)")
	useHTTP := fs.Bool("http", false, "OTLP/HTTP protobuf (POST /v1/traces) instead of gRPC")
	in := fs.String("in", "", "request file (from `gymload req`); default a Gym-shaped 512-span request")
	conc := fs.Int("conc", 4, "requests in flight")
	dur := fs.Duration("dur", 10*time.Second, "issue requests for this long; in-flight ones may finish (30 s grace)")
	maxSpans := fs.Int64("spans", 0, "stop after this many spans, rounded down to whole requests (0 = only -dur)")
	_ = fs.Parse(args)
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		log.Fatal(err)
	}
	if ip := net.ParseIP(host); !(host == "localhost" || (ip != nil && ip.IsLoopback())) {
		log.Fatal(errors.New("blast only sends to loopback addresses"))
	}
	var b []byte
	if *in != "" {
		if b, err = os.ReadFile(*in); err != nil {
			log.Fatal(err)
		}
	} else if b, err = proto.Marshal(GymRequest(512, 1)); err != nil {
		log.Fatal(err)
	}
	patch, n := newIDPatcher(b)

	var send func(ctx context.Context, req []byte) error
	if *useHTTP {
		tp := &http.Transport{MaxIdleConnsPerHost: *conc, MaxConnsPerHost: *conc, DisableCompression: true}
		defer tp.CloseIdleConnections()
		cl := &http.Client{Transport: tp}
		url := "http://" + *addr + "/v1/traces"
		send = func(ctx context.Context, req []byte) error {
			hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(req))
			if err != nil {
				return err
			}
			hr.Header.Set("Content-Type", "application/x-protobuf")
			resp, err := cl.Do(hr)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("HTTP %d", resp.StatusCode)
			}
			return nil
		}
	} else {
		conn, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			log.Fatal(err)
		}
		defer conn.Close()
		send = func(ctx context.Context, req []byte) error {
			var resp []byte
			return conn.Invoke(ctx, "/opentelemetry.proto.collector.trace.v1.TraceService/Export", &req, &resp, grpc.ForceCodec(rawCodec{}))
		}
	}

	var reqNo, sent, acked, failed atomic.Int64
	var firstErr atomic.Value
	ctx, cancel := context.WithTimeout(context.Background(), *dur+30*time.Second)
	defer cancel()
	start := time.Now()
	stopAt := start.Add(*dur)
	var wg sync.WaitGroup
	for range *conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, len(b))
			for time.Now().Before(stopAt) && ctx.Err() == nil {
				k := reqNo.Add(1)
				if *maxSpans > 0 && k*int64(n) > *maxSpans {
					return
				}
				patch.apply(buf, b, uint64(k))
				sent.Add(int64(n))
				if err := send(ctx, buf); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				acked.Add(int64(n))
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	e := ""
	if v := firstErr.Load(); v != nil {
		e = strings.ReplaceAll(v.(string), " ", "_")
	}
	fmt.Printf("BLAST sent_spans=%d acked_spans=%d failed_reqs=%d wall_s=%.2f spans_per_s=%.0f spans_per_req=%d id_offsets=%d first_err=%s\n",
		sent.Load(), acked.Load(), failed.Load(), el, float64(acked.Load())/el, n, len(patch.offs), e)
}
