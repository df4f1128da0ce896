package receiver

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/grpc/codes"
)

// ReasonForeignHost counts requests to a loopback receiver whose Host or
// Origin is not loopback: a web page the user visits can reach 127.0.0.1
// through DNS rebinding or a plain cross-site POST, and would otherwise
// write spans into the store.
const ReasonForeignHost = "foreign_host"

// hostGuard checks Host and Origin on a loopback listener. The zero value
// (a listener beyond loopback, where the token guards) lets all through.
type hostGuard struct {
	on    bool
	allow map[string]bool // extra host names, lower case, without port
}

func newHostGuard(listen string, allowed []string) hostGuard {
	g := hostGuard{on: IsLoopback(listen), allow: map[string]bool{}}
	for _, h := range allowed {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			g.allow[h] = true
		}
	}
	return g
}

// loopbackName reports whether host (no port) names this machine's
// loopback: localhost, *.localhost, 127.0.0.0/8 or ::1.
func loopbackName(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

func (g hostGuard) ok(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	return loopbackName(host) || g.allow[strings.ToLower(host)]
}

// check refuses (403) a request whose Host, or browser Origin, is not a
// loopback name or one allowed with --allow-host.
func (g hostGuard) check(r *http.Request) *httpError {
	if !g.on {
		return nil
	}
	if !g.ok(r.Host) {
		return &httpError{status: http.StatusForbidden, code: codes.PermissionDenied, reason: ReasonForeignHost,
			msg: fmt.Sprintf("Host %q is not a loopback name and this receiver listens on loopback only; allow it with --allow-host", r.Host)}
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host == "" || !g.ok(u.Host) {
			return &httpError{status: http.StatusForbidden, code: codes.PermissionDenied, reason: ReasonForeignHost,
				msg: fmt.Sprintf("Origin %q is not a loopback page; allow its host with --allow-host", o)}
		}
	}
	return nil
}
