package contract

import (
	"regexp"
	"strings"
)

// secretKeys are attribute key segments that name a credential. A key is
// split at '.', so http.request.header.authorization matches and
// gen_ai.usage.input_tokens does not.
var secretKeys = map[string]bool{
	"authorization": true, "proxy-authorization": true, "proxy_authorization": true,
	"api_key": true, "api-key": true, "apikey": true, "x-api-key": true, "x_api_key": true,
	"token": true, "access_token": true, "refresh_token": true, "id_token": true, "auth_token": true,
	"bearer_token": true, "session_token": true, "secret": true, "client_secret": true, "secret_key": true,
	"password": true, "passwd": true, "cookie": true, "set-cookie": true, "set_cookie": true,
	"private_key": true, "credentials": true, "credential": true,
}

// secretValues are value shapes that are credentials whatever their key.
var secretValues = []struct {
	re     *regexp.Regexp
	reason string
}{
	{regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9\-._~+/]{8,}=*`), "a bearer token"},
	{regexp.MustCompile(`(?i)\bbasic\s+[A-Za-z0-9+/]{12,}={0,2}(\s|$)`), "HTTP basic credentials"},
	{regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), "a JSON web token"},
	{regexp.MustCompile(`\b(sk|nvapi|ghp|gho|github_pat|xox[abpr]|hf)[-_][A-Za-z0-9_-]{16,}`), "an API key"},
	{regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`), "an AWS access key"},
	{regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----`), "a private key"},
	{regexp.MustCompile(`://[^/\s:@]+:[^/\s@]+@`), "a password in a URL"},
}

// redacted are values that say a secret was removed.
var redacted = map[string]bool{"": true, "*": true, "***": true, "****": true, "redacted": true, "[redacted]": true,
	"<redacted>": true, "hidden": true, "none": true, "null": true, "xxx": true}

// LooksSecret reports whether an attribute looks like a credential, and
// why: its key names one (with a value that is not a redaction), or its
// value has a credential's shape.
func LooksSecret(key, value string) (reason string, ok bool) {
	for _, sv := range secretValues {
		if sv.re.MatchString(value) {
			return sv.reason, true
		}
	}
	if redacted[strings.ToLower(strings.TrimSpace(value))] {
		return "", false
	}
	for _, seg := range strings.Split(strings.ToLower(key), ".") {
		if secretKeys[seg] {
			return "the key names a credential", true
		}
	}
	return "", false
}

// redact keeps a value's first four characters, so a report can say which
// secret it found without repeating it.
func redact(v string) string {
	r := []rune(v)
	if len(r) <= 4 {
		return strings.Repeat("*", len(r))
	}
	return string(r[:4]) + "…"
}
