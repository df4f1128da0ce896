package main

import (
	"bytes"
	"io"
	"sync"
)

// heldLog passes log lines through to w, except while the TUI owns the
// terminal: lines written then would be drawn over the screen, so they are
// kept (the TUI header shows the counts meanwhile) and written after it.
type heldLog struct {
	mu   sync.Mutex
	w    io.Writer
	held bool
	buf  bytes.Buffer
}

// heldLogMax bounds what is kept while held; the log is rate-limited, so
// only a very long session reaches it.
const heldLogMax = 1 << 20

func (h *heldLog) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.held {
		return h.w.Write(p)
	}
	if h.buf.Len()+len(p) <= heldLogMax {
		h.buf.Write(p)
	}
	return len(p), nil
}

// hold starts keeping lines.
func (h *heldLog) hold() {
	h.mu.Lock()
	h.held = true
	h.mu.Unlock()
}

// release writes what was kept and passes later lines through.
func (h *heldLog) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held = false
	_, _ = h.w.Write(h.buf.Bytes())
	h.buf.Reset()
}
