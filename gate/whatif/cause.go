package whatif

import (
	"strings"

	"github.com/nemo-gym/gymtrace/gate/groups"
)

// Cause is why a hop breaks, typed: it owns its sentence, its short form
// and its fix, so every face (CLI text, JSON, TUI) renders from it and none
// reads meaning back out of prose.
type Cause uint8

// Causes of a break the previewed spec would make.
const (
	CauseNone     Cause = iota
	CauseNoClient       // http_client off: the caller sends no traceparent
	CauseNoServer       // server off: the callee extracts none
	CauseNeither        // both off
	CauseCarried        // a carried-over context: only the job span keeps both in one trace
	// Causes of a break found in the capture itself.
	CauseServerRoot      // SERVER span with no parent: the caller sent none
	CauseNotInjected     // the caller's CLIENT span exists, the SERVER span has no parent
	CauseParentNotClient // a SERVER span's parent is no CLIENT span
	CauseParentMissing   // a span's parent never arrived
	CauseNoServerChild   // a CLIENT span answered with no SERVER span under it
	CauseNewTrace        // a process started a new trace inside the rollout
	CauseUnattributed    // a fragment no CLIENT span can be matched to
	CauseProcessNoJoins  // a process joins no other process's trace
	CauseLeak            // a request span carried over onto another request's context
	numCauses
)

// causeText is a cause's words: its sentence is finding, ": ", why, then
// each hint in parentheses. %s in finding and hints take the arguments, in
// order.
type causeText struct {
	code    string // the JSON name
	finding string
	why     string
	hints   []string
	fix     string // what to turn on in span_groups, "" when no group mends it
	// sentence, when set, is said whole in place of finding: why (hints):
	// for a cause whose one-line form names less than its sentence does.
	sentence string
}

var causes = [numCauses]causeText{
	CauseNoClient: {code: "http_client_off", finding: "http_client off", why: "no traceparent sent", fix: "keep http_client on"},
	CauseNoServer: {code: "server_off", finding: "server off", why: "traceparent not extracted", fix: "keep server on"},
	CauseNeither:  {code: "http_client_and_server_off", finding: "http_client and server off", why: "no traceparent sent or extracted", fix: "keep server and http_client on"},
	CauseCarried: {code: "context_carried_over", finding: "request context carried over on a reused keep-alive connection",
		why: "the span is in another rollout's trace, and only the job span keeps both in one", hints: []string{"job on?"}},
	CauseServerRoot: {code: "server_span_no_parent", finding: "SERVER span has no parent", why: "the caller sent no traceparent",
		hints: []string{"http_client off in %s?"}},
	CauseNotInjected: {code: "traceparent_not_injected", finding: "the caller's CLIENT span exists but the SERVER span has no parent",
		why: "the caller did not inject traceparent", hints: []string{"a call that bypasses Gym's HTTP client?"}},
	CauseParentNotClient: {code: "parent_not_client", finding: "SERVER span's parent is a %s span, not a CLIENT span",
		why: "context crossed processes outside an HTTP client call"},
	CauseParentMissing: {code: "parent_missing", finding: "%s span's parent never arrived", why: "the caller's span was not exported",
		hints: []string{"exporter dropped it, or the capture ended first"}},
	CauseNoServerChild: {code: "client_no_server_child", finding: "CLIENT span has no SERVER child", why: "the callee did not extract traceparent",
		hints: []string{"server off in %s?"}},
	CauseNewTrace: {code: "new_trace_in_rollout", finding: "%s starts a new trace inside the rollout", why: "the process did not extract traceparent",
		hints: []string{"server off in %s?"}},
	CauseProcessNoJoins: {code: "process_never_joins", finding: "process never joins another process's trace",
		why: "it neither sends nor reads traceparent", hints: []string{"server and http_client on in its span_groups?"}},
	CauseUnattributed: {code: "unattributed_fragment", finding: "no CLIENT span calls it", hints: []string{"http_client off? server off?"},
		sentence: "a fragment of %s that no CLIENT span can be matched to started during the rollout: its caller sent no traceparent (http_client off?) or the callee read none (server off?)"},
	CauseLeak: {code: "context_leak", finding: "request span created INTERNAL under another request's span",
		why: "request context carried over on a reused keep-alive connection", hints: []string{"a server-side context leak, not a span_groups setting"}},
}

// SpecCause is why a cross-process hop breaks under spec: what of server and
// http_client it has off, CauseNone when it keeps both. The preview's
// breaks are caused by it; a face reads them, never the spec.
func SpecCause(spec groups.Set) Cause {
	switch server, client := spec.Has(groups.Server), spec.Has(groups.HTTPClient); {
	case !server && !client:
		return CauseNeither
	case !client:
		return CauseNoClient
	case !server:
		return CauseNoServer
	}
	return CauseNone
}

// Code is the cause's stable name in JSON output.
func (c Cause) Code() string {
	if c < numCauses {
		return causes[c].code
	}
	return ""
}

// Fix is what to turn on to mend the break, "" when no group does.
func (c Cause) Fix() string {
	if c < numCauses {
		return causes[c].fix
	}
	return ""
}

// Leak reports whether the cause is a context leak, no span_groups setting.
func (c Cause) Leak() bool { return c == CauseLeak }

// Sentence is the cause said whole with its arguments (processes, kinds,
// span names), as reports print it.
func (c Cause) Sentence(args ...string) string {
	t, rest := c.words(args)
	if t.sentence != "" {
		return t.sentence
	}
	s := t.finding
	if t.why != "" {
		s += ": " + t.why
	}
	for _, h := range rest {
		s += " (" + h + ")"
	}
	return s
}

// Short is the finding and its hints without the explanation between, for
// a view that has one line: "SERVER span has no parent (http_client off in
// nemo-gym/simple_agent?)".
func (c Cause) Short(args ...string) string {
	t, hints := c.words(args)
	if len(hints) == 0 {
		return t.finding
	}
	return t.finding + " (" + strings.Join(hints, " ") + ")"
}

// Finding is the cause's first words, what the capture shows.
func (c Cause) Finding(args ...string) string {
	t, _ := c.words(args)
	return t.finding
}

// words fills the cause's finding and hints with args, in order.
func (c Cause) words(args []string) (causeText, []string) {
	var t causeText
	if c < numCauses {
		t = causes[c]
	}
	n := 0
	fill := func(s string) string {
		for strings.Contains(s, "%s") {
			s = strings.Replace(s, "%s", arg(args, n), 1)
			n++
		}
		return s
	}
	t.finding = fill(t.finding)
	hints := make([]string, len(t.hints))
	for i, h := range t.hints {
		hints[i] = fill(h)
	}
	n = 0 // a whole sentence takes the arguments from the first
	t.sentence = fill(t.sentence)
	return t, hints
}

func arg(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}
