package contract

import (
	"bytes"
	"strings"
	"testing"

	"github.com/nemo-gym/gymtrace/gate/internal/realgym"
)

// TestSelfPasses: every real capture holds to itself.
func TestSelfPasses(t *testing.T) {
	for _, name := range realgym.Cases(t) {
		t.Run(name, func(t *testing.T) {
			p := profile(t, name)
			if r := Compare(p, p, DefaultTolerance); !r.Pass() {
				t.Errorf("against itself: %v", r.Findings)
			}
		})
	}
}

// TestBrokenModelFails: the run whose model server read no traceparent
// fails against its healthy twin (same seed, every process on all), and
// the first finding names the hop that broke, as joined before.
func TestBrokenModelFails(t *testing.T) {
	for _, tc := range []struct{ healthy, broken string }{
		{"s41-obs0-iso/all", "s41-obs0-iso/broken-model"},
		{"s52-g3-obs0-iso/all", "s52-g3-obs0-iso/broken-model"},
	} {
		t.Run(tc.broken, func(t *testing.T) {
			r := Compare(profile(t, tc.healthy), profile(t, tc.broken), DefaultTolerance)
			if r.Pass() {
				t.Fatal("passes")
			}
			f := r.Findings[0]
			if f.Kind != HopBroke || f.Hop.FromService != "nemo-gym/simple_agent" || f.Hop.ToService != "nemo-gym/policy_model" ||
				f.Hop.SpanName != "POST /v1/responses" || f.Hop.Rollouts != 20 || f.JoinedBefore != f.Hop.Spans {
				t.Fatalf("first finding %+v, want the agent -> model hop, joined as often before", f)
			}
			if s := f.String(); !strings.Contains(s, "nemo-gym/simple_agent -> nemo-gym/policy_model (POST /v1/responses) joined in the baseline") {
				t.Errorf("finding reads %q", s)
			}
			var kinds []Kind
			for _, f := range r.Findings {
				kinds = append(kinds, f.Kind)
			}
			// The model's SERVER spans and their ASGI children are gone: a
			// fifth fewer spans and bytes.
			if !containsKind(kinds, SpansDrift) || !containsKind(kinds, BytesDrift) {
				t.Errorf("kinds %v, want the drifts too", kinds)
			}
			// The other way round, the healthy run has no broken hop but
			// drifts up.
			back := Compare(profile(t, tc.broken), profile(t, tc.healthy), DefaultTolerance)
			for _, f := range back.Findings {
				if f.Kind == HopBroke {
					t.Errorf("healthy against broken: %v", f)
				}
			}
		})
	}
}

func containsKind(ks []Kind, k Kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// TestTolerance: the aiohttp instrumentation adds a CLIENT span per hop,
// +14.7 % spans per rollout: past 10 %, within 20 %.
func TestTolerance(t *testing.T) {
	base, cur := profile(t, "s41-obs0-iso/all"), profile(t, "s41-obs0-iso/aiohttp-all")
	r := Compare(base, cur, DefaultTolerance)
	if len(r.Findings) == 0 || r.Findings[0].Kind != SpansDrift || r.Findings[0].Change < 0.14 || r.Findings[0].Change > 0.15 {
		t.Fatalf("at 10%%: %v", r.Findings)
	}
	if r := Compare(base, cur, 0.2); !r.Pass() {
		t.Errorf("at 20%%: %v", r.Findings)
	}
}

// TestContextLeaksNotHeldAgainst: the leak run differs from its isolated
// twin only by carried-over contexts, which depend on timing: they are
// listed and pass.
func TestContextLeaksNotHeldAgainst(t *testing.T) {
	r := Compare(profile(t, "s41-obs0-iso/all"), profile(t, "s41-obs0-leak/all"), DefaultTolerance)
	if !r.Pass() || len(r.Leaks) == 0 {
		t.Errorf("pass %v (%v), %d leaks listed", r.Pass(), r.Findings, len(r.Leaks))
	}
}

// TestTamperedCaptures: a real capture with one thing changed fails
// against the original on exactly that.
func TestTamperedCaptures(t *testing.T) {
	const name = "s41-obs0-iso/all"
	base := profile(t, name)
	renamed := 0
	tests := []struct {
		name  string
		role  string
		edit  func([]byte) []byte
		kind  Kind
		check func(t *testing.T, f Finding)
	}{
		{"secret header", "agent", func(l []byte) []byte {
			return bytes.Replace(l, []byte(`"attributes": {"nemo.gym.server.name": "simple_agent"}`),
				[]byte(`"attributes": {"nemo.gym.server.name": "simple_agent", "http.request.header.authorization": "Bearer sk-live-0123456789abcdef0123"}`), 1)
		}, SecretValue, func(t *testing.T, f Finding) {
			s := f.String()
			if f.Secret.Key != "http.request.header.authorization" || f.Secret.Sample != "Bear…" || strings.Contains(s, "0123456789") {
				t.Errorf("finding %+v reads %q", f.Secret, s)
			}
		}},
		{"unclassified name", "resources", func(l []byte) []byte {
			if renamed == 0 && bytes.Contains(l, []byte(`"name": "gym.verify"`)) {
				renamed++
				return bytes.Replace(l, []byte(`"name": "gym.verify"`), []byte(`"name": "gym.grade"`), 1)
			}
			return l
		}, Unclassified, func(t *testing.T, f Finding) {
			if f.Where != (Where{"nemo-gym/example_single_tool_call", "gym.grade"}) || f.Count != 1 {
				t.Errorf("finding %+v", f)
			}
		}},
		{"parent lost", "agent", func(l []byte) []byte {
			if bytes.Contains(l, []byte(`"name": "gym.rollout"`)) {
				return nil
			}
			return l
		}, Orphans, func(t *testing.T, f Finding) {
			if f.Where.Service != "nemo-gym/simple_agent" || f.BaselineCount != 0 || f.Count == 0 {
				t.Errorf("finding %+v", f)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := Measure(realgym.Read(t, tampered(t, name, tt.role, tt.edit)))
			r := Compare(base, cur, DefaultTolerance)
			var found *Finding
			for i, f := range r.Findings {
				if f.Kind == tt.kind && found == nil {
					found = &r.Findings[i]
				}
			}
			if found == nil {
				t.Fatalf("no %v finding in %v", tt.kind, r.Findings)
			}
			tt.check(t, *found)
			// And the tampered capture against itself: only the secret,
			// which no baseline excuses, still fails.
			self := Compare(cur, cur, DefaultTolerance)
			if self.Pass() == (tt.kind == SecretValue) {
				t.Errorf("tampered against itself: %v", self.Findings)
			}
		})
	}
}

// TestLooksSecret: credentials by key or by shape; counts of tokens,
// rollout ids and redactions are not.
func TestLooksSecret(t *testing.T) {
	tests := []struct {
		key, value string
		want       bool
	}{
		{"http.request.header.authorization", "Bearer abcdefgh12345678", true},
		{"authorization", "xyz", true},
		{"api_key", "k-123", true},
		{"openai.api_key", "whatever", true},
		{"token", "abc", true},
		{"url.full", "https://user:hunter2@example.com/v1", true},
		{"message", "sent with Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", true},
		{"note", "key is sk-proj-abcdefghijklmnop1234", true},
		{"note", "nvapi-abcdefghijklmnopqrstuv", true},
		{"aws", "AKIAIOSFODNN7EXAMPLE", true},
		{"api_key", "", false},
		{"authorization", "[REDACTED]", false},
		{"gen_ai.usage.input_tokens", "123", false},
		{"nemo.gym.rollout.id", "3-0", false},
		{"http.url", "http://127.0.0.1:52869/verify", false},
		{"exception.message", "500, message='Internal Server Error'", false},
		{"http.user_agent", "Python/3.12 aiohttp/3.9.5", false},
	}
	for _, tt := range tests {
		if _, got := LooksSecret(tt.key, tt.value); got != tt.want {
			t.Errorf("LooksSecret(%q, %q) = %v, want %v", tt.key, tt.value, got, tt.want)
		}
	}
}
