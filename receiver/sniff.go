package receiver

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// sniffListener wraps the gRPC listener to tell HTTP/1.x requests, an
// OTLP/HTTP exporter pointed at the gRPC port, from gRPC's HTTP/2: gRPC
// would drop such a connection with a log line the sender never sees, so
// the exporter reports a bare connection reset and gymtrace shows nothing.
// Such a request is answered 400 naming the OTLP/HTTP address, counted as
// a refusal (ReasonWrongPort) and logged.
type sniffListener struct {
	net.Listener
	s *Server
}

func (l *sniffListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c, s: l.s}, nil
}

// http1Methods start an HTTP/1.x request; gRPC's connections start with
// the HTTP/2 preface, "PRI * HTTP/2.0".
var http1Methods = [][]byte{[]byte("POST "), []byte("GET "), []byte("PUT "), []byte("HEAD "), []byte("OPTIONS "), []byte("DELETE "), []byte("PATCH ")}

// sniffConn looks at the first bytes a client sends.
type sniffConn struct {
	net.Conn
	s       *Server
	once    sync.Once
	refused bool
}

func (c *sniffConn) Read(p []byte) (int, error) {
	checked := true
	var n int
	var err error
	c.once.Do(func() {
		checked = false
		// gRPC reads the 24-byte preface first; 8 bytes tell a method.
		want := min(len(p), 8)
		n, err = io.ReadAtLeast(c.Conn, p, want)
		if n > 0 && isHTTP1(p[:n]) {
			c.refused = true
			c.refuseHTTP1(p[:n])
			n, err = 0, io.EOF
		}
	})
	if checked {
		if c.refused {
			return 0, io.EOF
		}
		return c.Conn.Read(p)
	}
	return n, err
}

func isHTTP1(b []byte) bool {
	for _, m := range http1Methods {
		k := min(len(b), len(m))
		if k >= 4 && bytes.Equal(b[:k], m[:k]) {
			return true
		}
	}
	return false
}

// refuseHTTP1 answers an HTTP/1.x request on the gRPC port and closes the
// connection.
func (c *sniffConn) refuseHTTP1(head []byte) {
	_, httpAddr := c.s.Addrs()
	where := "its own port"
	if httpAddr != "" {
		where = httpAddr
	} else if c.s.cfg.HTTPAddr == Off {
		where = "off here (--http-addr off)"
	}
	msg := fmt.Sprintf("this is the OTLP/gRPC port; OTLP/HTTP is on %s", where)
	// Read what is left of the request line, to name it in the log.
	line := head
	if i := bytes.IndexAny(line, "\r\n"); i >= 0 {
		line = line[:i]
	} else {
		_ = c.Conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		rest := make([]byte, 256)
		k, _ := c.Conn.Read(rest)
		line = append(append([]byte(nil), head...), rest[:k]...)
		if i := bytes.IndexAny(line, "\r\n"); i >= 0 {
			line = line[:i]
		}
	}
	body := msg + "\n"
	_ = c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c.Conn, "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	c.s.requests.Add(1)
	c.s.failed.Add(1)
	c.s.refuse(ReasonWrongPort, c.RemoteAddr().String(), fmt.Sprintf("HTTP/1.1 %q on the gRPC port", line), msg)
	c.Conn.Close()
}
