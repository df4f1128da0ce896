package mcpserver

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nemo-gym/gymtrace/gate/advise"
	"github.com/nemo-gym/gymtrace/gate/cohort"
	"github.com/nemo-gym/gymtrace/gate/groups"
	"github.com/nemo-gym/gymtrace/gate/report"
	"github.com/nemo-gym/gymtrace/gate/whatif"
	"github.com/nemo-gym/gymtrace/model"
)

// Source gives the newest snapshot of a store: a *model.Store, live or
// loaded from files.
type Source interface {
	Snapshot() *model.Snapshot
}

// Config is what a server answers over.
type Config struct {
	// Source is the store the tools read, one snapshot a call.
	Source Source
	// Registry and Variant are the Gym variant's groups and how it was
	// chosen; Pick, when set, chooses them per snapshot instead (a live
	// store whose variant its first spans tell).
	Registry *groups.Registry
	Variant  report.Variant
	Pick     func(*model.Snapshot) (report.Variant, *groups.Registry)
	// Setting is the span_groups setting in force, which check and
	// preview compare against.
	Setting report.Setting
	// Live: spans still arrive, so fresh rollouts are pending for
	// whatif.LiveGrace and the run ends after whatif.JobQuiet.
	Live bool
	// BadLines is what reading the files skipped (nil when live).
	BadLines *report.BadLines
	// Evidence, when set, gives Gym's outcome files (rewards, failures,
	// verdicts), joined to the rollouts of each call's snapshot.
	Evidence EvidenceFunc
	// Version is gymtrace's version, as the server names itself.
	Version string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Server is an MCP server over one store.
type Server struct {
	cfg Config
	srv *mcp.Server

	// mu serializes tool calls: they share eng, whose caches make a call
	// on a snapshot that changed little cost only what changed.
	mu  sync.Mutex
	eng *whatif.Engine
	reg *groups.Registry
	ev  evState
	// memo keeps the last snapshot's costly answers; prof the rollouts'
	// features for cohort, by version, for profEng.
	memo    memo
	prof    *cohort.Profiles
	profEng *whatif.Engine
	// advice is what recommend searches measured, per spec and rollout.
	advice advise.Cache
}

// New returns a server with every tool, prompt and resource added.
func New(cfg Config) *Server {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	s := &Server{cfg: cfg}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "gymtrace", Title: "gymtrace: NeMo Gym rollout traces", Version: cfg.Version},
		&mcp.ServerOptions{Instructions: Instructions, Capabilities: &mcp.ServerCapabilities{}})
	s.addTools()
	s.addPlaybooks()
	return s
}

// MCP returns the SDK's server, to run on any transport.
func (s *Server) MCP() *mcp.Server { return s.srv }

// RunStdio serves one client on stdin and stdout until it leaves or ctx
// ends.
func (s *Server) RunStdio(ctx context.Context) error {
	return s.srv.Run(ctx, &mcp.StdioTransport{})
}

// Handler serves the streamable HTTP transport. The SDK refuses, 403,
// a request that reached a loopback address with another Host (DNS
// rebinding); cross-origin browser requests are refused too.
func (s *Server) Handler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, &mcp.StreamableHTTPOptions{})
	return http.NewCrossOriginProtection().Handler(h)
}

// view is one call's state: the snapshot, its variant and the engine,
// held under mu.
type view struct {
	snap *model.Snapshot
	v    report.Variant
	reg  *groups.Registry
	eng  *whatif.Engine
	now  time.Time
}

// begin locks the engine for a call and takes the newest snapshot; the
// caller must call the returned func.
func (s *Server) begin() (*view, func(), error) {
	s.mu.Lock()
	snap := s.cfg.Source.Snapshot()
	if snap == nil {
		s.mu.Unlock()
		return nil, nil, fmt.Errorf("no spans yet: the store has published nothing")
	}
	v, reg := s.cfg.Variant, s.cfg.Registry
	if s.cfg.Pick != nil {
		v, reg = s.cfg.Pick(snap)
	}
	if reg == nil {
		reg = groups.Default()
	}
	if s.eng == nil || s.reg != reg {
		s.eng, s.reg = whatif.NewEngine(reg), reg
	}
	return &view{snap: snap, v: v, reg: reg, eng: s.eng, now: s.cfg.Now()}, s.mu.Unlock, nil
}

// grace is the pending window of the check: live stores wait for late
// spans, files are complete.
func (s *Server) grace() time.Duration {
	if s.cfg.Live {
		return whatif.LiveGrace
	}
	return 0
}

// quiet is how long a live run must be quiet to count as ended.
func (s *Server) quiet() time.Duration {
	if s.cfg.Live {
		return whatif.JobQuiet
	}
	return 0
}

// check is the join check of the view's snapshot (cached by the engine).
func (s *Server) check(v *view) *whatif.CheckReport {
	return v.eng.Check(v.snap, v.now, s.grace())
}

// Authorized wraps h so that every request must carry "authorization:
// Bearer token" (401 otherwise), the rule the OTLP receivers keep; an
// empty token lets every request through.
func Authorized(h http.Handler, token string) http.Handler {
	if token == "" {
		return h
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gymtrace"`)
			http.Error(w, "missing or wrong 'authorization: Bearer TOKEN' (the token is --auth-token or $GYMTRACE_AUTH_TOKEN)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
