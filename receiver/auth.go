package receiver

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"strings"
)

// ErrExposed means a receiver would listen beyond loopback with no token and
// without Insecure: anyone on the network could write spans into the store.
var ErrExposed = errors.New("refusing to listen beyond loopback without a token")

// IsLoopback reports whether addr (host:port) only accepts local
// connections: 127.0.0.0/8, ::1 or "localhost". An empty host listens on
// every interface, so it is not loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkExposure returns ErrExposed, naming the address, when one of addrs is
// not loopback and neither a token nor insecure was given.
func checkExposure(token string, insecure bool, addrs ...string) error {
	if token != "" || insecure {
		return nil
	}
	for _, a := range addrs {
		if a != "" && !IsLoopback(a) {
			return fmt.Errorf("%w: %s is not a loopback address; set --auth-token (or GYMTRACE_AUTH_TOKEN), or pass --insecure", ErrExposed, a)
		}
	}
	return nil
}

// authorizer checks the "authorization: Bearer <token>" credential of a
// request. The zero value (no token) lets every request through.
type authorizer struct {
	token []byte
}

func newAuthorizer(token string) authorizer {
	if token == "" {
		return authorizer{}
	}
	return authorizer{token: []byte(token)}
}

// enabled reports whether requests must carry the token.
func (a authorizer) enabled() bool { return a.token != nil }

// allow reports whether the header value carries the token. The comparison
// takes the same time whatever prefix matches, so the token cannot be
// guessed byte by byte from response times.
func (a authorizer) allow(header string) bool {
	if a.token == nil {
		return true
	}
	// The scheme is case-insensitive (RFC 9110 §11.1); the token is not.
	// Spaces around the value and after the scheme are dropped, as net/http
	// drops them around HTTP header values but gRPC metadata keeps them:
	// both transports must agree on what passes.
	header = strings.Trim(header, " \t")
	const scheme = "bearer"
	if len(header) <= len(scheme) || !strings.EqualFold(header[:len(scheme)], scheme) ||
		(header[len(scheme)] != ' ' && header[len(scheme)] != '\t') {
		return false
	}
	tok := strings.TrimLeft(header[len(scheme):], " \t")
	return subtle.ConstantTimeCompare([]byte(tok), a.token) == 1
}
