package receiver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// sniffListener wraps the gRPC listener to tell HTTP/1.x requests, an
// OTLP/HTTP exporter pointed at the gRPC port, from gRPC's HTTP/2: gRPC
// would drop such a connection after sending its own settings frame, so
// the exporter reports a garbled response and gymtrace shows nothing. Such
// a request is answered 400 naming the OTLP/HTTP address, counted as a
// refusal (ReasonWrongPort) and logged. Each connection's first bytes are
// read on a goroutine of its own, so a slow client holds up no other.
type sniffListener struct {
	net.Listener
	s     *Server
	conns chan net.Conn
	errs  chan error
	done  chan struct{}
	once  sync.Once
}

// sniffWait bounds how long a new connection may take to send its first
// bytes, as gRPC's own connection timeout does.
const sniffWait = 10 * time.Second

func newSniffListener(ln net.Listener, s *Server) *sniffListener {
	l := &sniffListener{Listener: ln, s: s, conns: make(chan net.Conn), errs: make(chan error), done: make(chan struct{})}
	go l.accept()
	return l
}

func (l *sniffListener) accept() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			select {
			case l.errs <- err:
			case <-l.done:
				return
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		go l.sniff(c)
	}
}

func (l *sniffListener) sniff(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(sniffWait))
	head := make([]byte, 8)
	n, err := io.ReadAtLeast(c, head, 4)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil && n == 0 {
		c.Close()
		return
	}
	if isHTTP1(head[:n]) {
		l.refuseHTTP1(c, head[:n])
		return
	}
	select {
	case l.conns <- &prefixConn{Conn: c, prefix: head[:n]}:
	case <-l.done:
		c.Close()
	}
}

func (l *sniffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case err := <-l.errs:
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *sniffListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// prefixConn reads the sniffed bytes again before the rest.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// http1Methods start an HTTP/1.x request; gRPC's connections start with
// the HTTP/2 preface, "PRI * HTTP/2.0".
var http1Methods = [][]byte{[]byte("POST "), []byte("GET "), []byte("PUT "), []byte("HEAD "), []byte("OPTIONS "), []byte("DELETE "), []byte("PATCH ")}

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
func (l *sniffListener) refuseHTTP1(c net.Conn, head []byte) {
	defer c.Close()
	s := l.s
	_, httpAddr := s.Addrs()
	where := httpAddr
	if where == "" {
		where = "off here (--http-addr off)"
	}
	msg := "this is the OTLP/gRPC port; OTLP/HTTP is on " + where
	// The request line, to name it in the log.
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	line := append([]byte(nil), head...)
	for !bytes.ContainsAny(line, "\r\n") && len(line) < 512 {
		buf := make([]byte, 256)
		k, err := c.Read(buf)
		line = append(line, buf[:k]...)
		if err != nil {
			break
		}
	}
	if i := bytes.IndexAny(line, "\r\n"); i >= 0 {
		line = line[:i]
	}
	// Counted and logged before the answer: a sender that has the answer
	// finds the refusal in the stats.
	s.requests.Add(1)
	s.failed.Add(1)
	s.refuse(ReasonWrongPort, c.RemoteAddr().String(), fmt.Sprintf("HTTP/1.1 %q on the gRPC port", line), msg)
	body := msg + "\n"
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(c, "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
}
