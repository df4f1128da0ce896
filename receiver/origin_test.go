package receiver

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/nemo-gym/gymtrace/model"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc/metadata"
)

// TestForeignHostRefused: a loopback receiver refuses requests naming
// another host (DNS rebinding) or coming from a web page elsewhere, and
// takes those allowed with AllowHosts.
func TestForeignHostRefused(t *testing.T) {
	srv, st := startServer(t, Config{GRPCAddr: Off, AllowHosts: []string{"gymtrace.internal"}}, model.Options{})
	_, addr := srv.Addrs()
	body := encodeRequest(t, testRequest(1))
	tests := []struct {
		name         string
		host, origin string
		want         int
	}{
		{"loopback address", addr, "", http.StatusOK},
		{"localhost", "localhost:4318", "", http.StatusOK},
		{"ipv6 loopback", "[::1]:4318", "", http.StatusOK},
		{"allowed name", "gymtrace.internal:4318", "", http.StatusOK},
		{"loopback page", addr, "http://localhost:3000", http.StatusOK},
		{"rebound name", "evil.example:4318", "", http.StatusForbidden},
		{"foreign page", addr, "https://evil.example", http.StatusForbidden},
		{"null origin", addr, "null", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/traces", bytes.NewReader(body))
			req.Host = tt.host
			req.Header.Set("Content-Type", mediaProto)
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			resp, err := httpClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
	st.Sync()
	if r := st.Snapshot().Stats.RequestsRefused; r != 3 {
		t.Errorf("%d requests refused, want 3", r)
	}
}

// TestBearerParsedAlikeOnBothTransports: a token with spaces around it or
// after the scheme passes on gRPC exactly when it passes on HTTP.
func TestBearerParsedAlikeOnBothTransports(t *testing.T) {
	a := newAuthorizer("s3cret")
	for _, tt := range []struct {
		header string
		want   bool
	}{
		{"Bearer s3cret", true},
		{"bearer s3cret", true},
		{"Bearer  s3cret", true},
		{" Bearer s3cret ", true},
		{"Bearer\ts3cret", true},
		{"Bearers3cret", false},
		{"Bearer s3cre", false},
		{"Bearer", false},
		{"Basic s3cret", false},
	} {
		if got := a.allow(tt.header); got != tt.want {
			t.Errorf("allow(%q) = %v, want %v", tt.header, got, tt.want)
		}
	}
	// Both transports, end to end, with a padded token.
	srv, _ := startServer(t, Config{AuthToken: "s3cret"}, model.Options{})
	grpcAddr, httpAddr := srv.Addrs()
	code, _, _ := doHTTP(t, http.MethodPost, httpAddr, "/v1/traces", map[string]string{"Content-Type": mediaProto, "Authorization": "Bearer  s3cret "}, encodeRequest(t, testRequest(1)))
	if code != http.StatusOK {
		t.Errorf("HTTP with a padded token: %d", code)
	}
	cc := dialRaw(t, grpcAddr)
	defer cc.Close()
	ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer  s3cret ")
	if err := cc.Invoke(ctx, traceExport, &rawRequest{b: encodeRequest(t, testRequest(1))}, new(coltrace.ExportTraceServiceResponse)); err != nil {
		t.Errorf("gRPC with a padded token: %v", err)
	}
}
