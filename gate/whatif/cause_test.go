package whatif

import (
	"fmt"
	"testing"
)

// The sentences reports have printed, word for word: the causes must keep
// them (scripts and users read them), and the tests below speak in them.
const (
	reasonServerRoot     = "SERVER span has no parent: the caller sent no traceparent (http_client off in %s?)"
	reasonNotInjected    = "the caller's CLIENT span exists but the SERVER span has no parent: the caller did not inject traceparent (a call that bypasses Gym's HTTP client?)"
	reasonParentNotCl    = "SERVER span's parent is a %s span, not a CLIENT span: context crossed processes outside an HTTP client call"
	reasonParentMissing  = "%s span's parent never arrived: the caller's span was not exported (exporter dropped it, or the capture ended first)"
	reasonNoServerChild  = "CLIENT span has no SERVER child: the callee did not extract traceparent (server off in %s?)"
	reasonNewTrace       = "%s starts a new trace inside the rollout: the process did not extract traceparent (server off in %s?)"
	reasonUnattributed   = "a fragment of %s that no CLIENT span can be matched to started during the rollout: its caller sent no traceparent (http_client off?) or the callee read none (server off?)"
	reasonProcessNoJoins = "process never joins another process's trace: it neither sends nor reads traceparent (server and http_client on in its span_groups?)"
	reasonNoClient       = "http_client off: no traceparent sent"
	reasonNoServer       = "server off: traceparent not extracted"
	reasonNeither        = "http_client and server off: no traceparent sent or extracted"
	reasonCarried        = "request context carried over on a reused keep-alive connection: the span is in another rollout's trace, and only the job span keeps both in one (job on?)"
	reasonLeak           = "request span created INTERNAL under another request's span: request context carried over on a reused keep-alive connection (a server-side context leak, not a span_groups setting)"
)

func TestCauseSentences(t *testing.T) {
	for _, c := range []struct {
		cause Cause
		args  []string
		want  string
		short string
		fix   string
	}{
		{CauseServerRoot, []string{"nemo-gym/agent"}, fmt.Sprintf(reasonServerRoot, "nemo-gym/agent"), "SERVER span has no parent (http_client off in nemo-gym/agent?)", ""},
		{CauseNotInjected, nil, reasonNotInjected, "the caller's CLIENT span exists but the SERVER span has no parent (a call that bypasses Gym's HTTP client?)", ""},
		{CauseParentNotClient, []string{"INTERNAL"}, fmt.Sprintf(reasonParentNotCl, "INTERNAL"), "SERVER span's parent is a INTERNAL span, not a CLIENT span", ""},
		{CauseParentMissing, []string{"SERVER"}, fmt.Sprintf(reasonParentMissing, "SERVER"), "SERVER span's parent never arrived (exporter dropped it, or the capture ended first)", ""},
		{CauseNoServerChild, []string{"m"}, fmt.Sprintf(reasonNoServerChild, "m"), "CLIENT span has no SERVER child (server off in m?)", ""},
		{CauseNewTrace, []string{"gym.verify", "r"}, fmt.Sprintf(reasonNewTrace, "gym.verify", "r"), "gym.verify starts a new trace inside the rollout (server off in r?)", ""},
		{CauseUnattributed, []string{"r"}, fmt.Sprintf(reasonUnattributed, "r"), "no CLIENT span calls it (http_client off? server off?)", ""},
		{CauseProcessNoJoins, nil, reasonProcessNoJoins, "process never joins another process's trace (server and http_client on in its span_groups?)", ""},
		{CauseLeak, nil, reasonLeak, "request span created INTERNAL under another request's span (a server-side context leak, not a span_groups setting)", ""},
		{CauseNoClient, nil, reasonNoClient, "http_client off", "keep http_client on"},
		{CauseNoServer, nil, reasonNoServer, "server off", "keep server on"},
		{CauseNeither, nil, reasonNeither, "http_client and server off", "keep server and http_client on"},
		{CauseCarried, nil, reasonCarried, "request context carried over on a reused keep-alive connection (job on?)", ""},
	} {
		if got := c.cause.Sentence(c.args...); got != c.want {
			t.Errorf("%s: sentence\n  %q\nwant\n  %q", c.cause.Code(), got, c.want)
		}
		if got := c.cause.Short(c.args...); got != c.short {
			t.Errorf("%s: short %q, want %q", c.cause.Code(), got, c.short)
		}
		if got := c.cause.Fix(); got != c.fix {
			t.Errorf("%s: fix %q, want %q", c.cause.Code(), got, c.fix)
		}
		if c.cause.Code() == "" {
			t.Errorf("cause %d has no code", c.cause)
		}
	}
}
