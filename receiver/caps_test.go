package receiver

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// TestSpanWithMillionEventsIsCapped sends one span carrying a million
// events (and a thousand links, and a 100 KiB name) over both encodings:
// the store keeps the first MaxEvents and MaxLinks and a cut name, and
// counts the rest.
func TestSpanWithMillionEventsIsCapped(t *testing.T) {
	nev := 1_000_000
	if testing.Short() || raceEnabled {
		nev = 50_000 // the race detector makes a million take 15 s
	}
	const nlink = 1000
	req := testRequest(1)
	sp := req.ResourceSpans[0].ScopeSpans[0].Spans[0]
	sp.Name = strings.Repeat("n", 100<<10)
	sp.Events = make([]*tracepb.Span_Event, nev)
	for i := range sp.Events {
		sp.Events[i] = &tracepb.Span_Event{TimeUnixNano: uint64(i + 1), Name: "e"}
	}
	for i := 0; i < nlink; i++ {
		sp.Links = append(sp.Links, &tracepb.Span_Link{TraceId: sp.TraceId, SpanId: []byte{0, 0, 0, 0, 0, 0, 1, byte(i)}})
	}
	for _, tt := range []struct {
		name, ctype string
		body        []byte
	}{
		{"protobuf", mediaProto, encodeRequest(t, req)},
		{"json", mediaJSON, bigSpanJSON(nev, nlink)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv, st := startServer(t, Config{GRPCAddr: Off, MaxRecvBytes: 64 << 20}, model.Options{})
			_, addr := srv.Addrs()
			if code, body := postHTTP(t, addr, "/v1/traces", tt.ctype, "", tt.body); code != http.StatusOK {
				t.Fatalf("status %d: %s", code, body)
			}
			st.Sync()
			s := st.Snapshot()
			if len(s.Rollouts) != 1 {
				t.Fatalf("%d rollouts", len(s.Rollouts))
			}
			got := &s.Rollouts[0].Fragments[0].Spans[0]
			if got.Extra == nil || len(got.Extra.Events) != DefaultMaxEvents || len(got.Extra.Links) != DefaultMaxLinks {
				t.Fatalf("kept %d events, %d links; want %d, %d", len(got.Extra.Events), len(got.Extra.Links), DefaultMaxEvents, DefaultMaxLinks)
			}
			if n := len(s.Str(got.Name)); n != DefaultMaxNameLen {
				t.Errorf("name of %d bytes kept, want %d", n, DefaultMaxNameLen)
			}
			if got.Flags()&model.FlagAttrsCapped == 0 {
				t.Error("span not marked capped")
			}
			want := fmt.Sprint(nev-DefaultMaxEvents, nlink-DefaultMaxLinks, 1)
			if g := fmt.Sprint(s.Stats.EventsDropped, s.Stats.LinksDropped, s.Stats.NamesTruncated); g != want {
				t.Errorf("counted events, links, names cut: %s; want %s", g, want)
			}
		})
	}
}

// bigSpanJSON is the request above in OTLP/JSON, written directly: the
// protojson encoder takes seconds over a million events.
func bigSpanJSON(nev, nlink int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"nemo-gym/test"}}]},"scopeSpans":[{"spans":[{"traceId":"abababababababababababababababab","spanId":"0000000000000001","name":"`)
	b.WriteString(strings.Repeat("n", 100<<10))
	b.WriteString(`","kind":1,"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000000001000","attributes":[{"key":"` + model.RolloutIDKey + `","value":{"stringValue":"r-1"}}],"events":[`)
	for i := 0; i < nev; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"timeUnixNano":"%d","name":"e"}`, i+1)
	}
	b.WriteString(`],"links":[`)
	for i := 0; i < nlink; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"traceId":"abababababababababababababababab","spanId":"00000000000001%02x"}`, i%256)
	}
	b.WriteString(`]}]}]}]}`)
	return b.Bytes()
}
