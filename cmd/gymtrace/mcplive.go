package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/mcpserver"
	"github.com/nemo-gym/gymtrace/model"
	"github.com/nemo-gym/gymtrace/receiver"
)

// mcpAddrUsage is --mcp-addr's help, shared by serve and demo.
const mcpAddrUsage = "serve the live store to MCP clients over streamable HTTP on this address, e.g. 127.0.0.1:4320 (default off; beyond loopback it needs --auth-token, as the receivers do)"

// liveMCP is the MCP server of a live store, listening on its own port.
type liveMCP struct {
	Addr string // the bound address
	srv  *http.Server
	done chan error
}

// startLiveMCP serves store to MCP clients on addr. A non-loopback address
// without token (and without insecure) is refused, as the receivers refuse
// one; the SDK refuses a loopback request whose Host is another name (DNS
// rebinding). ev, when set, is Gym's outcome files, read again as they
// grow (a feed of its own: the TUI's takes its changes). gymVersion pinned, the variant is reg's; else it is told
// from the spans once they show it, as the TUI's header tells it.
func startLiveMCP(ctx context.Context, addr, token string, insecure bool, store *model.Store, vc variantChoice, reg *groups.Registry,
	gymVersion, groupsFile string, s report.Setting, ev mcpserver.EvidenceFunc, warn io.Writer) (*liveMCP, error) {
	if token == "" && !insecure && !receiver.IsLoopback(addr) {
		return nil, fmt.Errorf("--mcp-addr: %w: %s is not a loopback address; set --auth-token (or %s), or pass --insecure", receiver.ErrExposed, addr, envAuthToken)
	}
	cfg := mcpserver.Config{Source: store, Registry: reg, Variant: vc.json(), Setting: s, Live: true, Evidence: ev}
	if _, pinned, _ := pinnedVariant(gymVersion); !pinned {
		cfg.Pick = livePick(vc, reg, groupsFile)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, withListenHint(fmt.Errorf("--mcp-addr: %w", err))
	}
	if token == "" && !receiver.IsLoopback(ln.Addr().String()) {
		fmt.Fprintf(warn, "warning: --insecure: MCP on %s answers anyone who can reach it, with no token\n", ln.Addr())
	}
	m := &liveMCP{Addr: ln.Addr().String(), done: make(chan error, 1),
		srv: &http.Server{Handler: mcpserver.Authorized(mcpserver.New(cfg).Handler(), token), ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		err := m.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		m.done <- err
	}()
	return m, nil
}

// stop closes the listener and the sessions; a tool call in flight ends
// with its snapshot, which the store's close does not touch.
func (m *liveMCP) stop() error {
	if m == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := m.srv.Shutdown(ctx)
	if err != nil {
		err = m.srv.Close()
	}
	return errors.Join(err, <-m.done)
}

// livePick tells the variant from a live store's spans, once they show
// it, and keeps it; until then the one given (the newest). The telling
// reads every span name, so it stops after redetectUpTo spans.
func livePick(vc variantChoice, reg *groups.Registry, groupsFile string) func(*model.Snapshot) (report.Variant, *groups.Registry) {
	var (
		mu      sync.Mutex
		settled bool
		v       = vc.json()
	)
	return func(snap *model.Snapshot) (report.Variant, *groups.Registry) {
		mu.Lock()
		defer mu.Unlock()
		if settled || snap == nil || snap.Stats.Stored == 0 {
			return v, reg
		}
		got, source := groups.DetectVariant(snap)
		if source == "" || len(source) >= 6 && source[:6] == "newest" {
			settled = snap.Stats.Stored >= redetectUpTo
			return v, reg
		}
		settled = true
		c := variantChoice{got, source}
		if r, err := loadRegistry(c, groupsFile); err == nil {
			v, reg = c.json(), r
		}
		return v, reg
	}
}

// uiAddrs is what the TUI's header names: the receivers, and the MCP
// server when one listens.
func uiAddrs(rr *runningReceivers) []string {
	if rr.MCPAddr == "" {
		return rr.Addrs
	}
	return append(append([]string(nil), rr.Addrs...), "mcp "+rr.MCPAddr)
}
