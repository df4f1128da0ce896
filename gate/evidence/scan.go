package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// The files' rows are large (a rollout row carries its whole conversation
// and trajectory) and only a few of their fields matter, so a row is walked
// at the top level and only the wanted values are decoded; the rest is
// skipped by bracket matching, several times faster than decoding it.

var errSyntax = errors.New("malformed JSON")

// maxDepth bounds nesting, so a hostile line cannot exhaust the stack.
const maxDepth = 512

// eachField calls fn with each top-level key of the JSON object in line and
// its raw value. The key is unescaped only when it has escapes.
func eachField(line []byte, fn func(key, val []byte) error) error {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return errors.New("not a JSON object")
	}
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		return trailing(line, i+1)
	}
	for {
		if i >= len(line) || line[i] != '"' {
			return errSyntax
		}
		end, err := skipString(line, i)
		if err != nil {
			return err
		}
		key := line[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var s string
			if json.Unmarshal(line[i:end], &s) != nil {
				return errSyntax
			}
			key = []byte(s)
		}
		i = skipSpace(line, end)
		if i >= len(line) || line[i] != ':' {
			return errSyntax
		}
		i = skipSpace(line, i+1)
		vend, err := skipValue(line, i, 0)
		if err != nil {
			return err
		}
		if err := fn(key, line[i:vend]); err != nil {
			return err
		}
		i = skipSpace(line, vend)
		if i >= len(line) {
			return errors.New("unterminated object")
		}
		switch line[i] {
		case ',':
			i = skipSpace(line, i+1)
		case '}':
			return trailing(line, i+1)
		default:
			return errSyntax
		}
	}
}

func trailing(line []byte, i int) error {
	if skipSpace(line, i) != len(line) {
		return errors.New("text after the JSON object")
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] ('"').
func skipString(b []byte, i int) (int, error) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, errors.New("unterminated string")
}

// skipValue returns the index just past the JSON value starting at b[i].
func skipValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return 0, errors.New("missing value")
	}
	switch c := b[i]; {
	case c == '"':
		return skipString(b, i)
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return 0, errors.New("nested too deeply")
		}
		close := byte('}')
		if c == '[' {
			close = ']'
		}
		j := skipSpace(b, i+1)
		if j < len(b) && b[j] == close {
			return j + 1, nil
		}
		for {
			if c == '{' {
				if j >= len(b) || b[j] != '"' {
					return 0, errSyntax
				}
				end, err := skipString(b, j)
				if err != nil {
					return 0, err
				}
				j = skipSpace(b, end)
				if j >= len(b) || b[j] != ':' {
					return 0, errSyntax
				}
				j = skipSpace(b, j+1)
			}
			end, err := skipValue(b, j, depth+1)
			if err != nil {
				return 0, err
			}
			j = skipSpace(b, end)
			if j >= len(b) {
				return 0, errSyntax
			}
			if b[j] == close {
				return j + 1, nil
			}
			if b[j] != ',' {
				return 0, errSyntax
			}
			j = skipSpace(b, j+1)
		}
	default:
		j := i
		for j < len(b) && !isDelim(b[j]) {
			j++
		}
		if j == i {
			return 0, errSyntax
		}
		switch lit := b[i:j]; {
		case string(lit) == "true", string(lit) == "false", string(lit) == "null":
		default:
			if _, err := strconv.ParseFloat(string(lit), 64); err != nil {
				return 0, errSyntax
			}
		}
		return j, nil
	}
}

func isDelim(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ':'
}

// eachElem calls fn with each raw element of the JSON array v.
func eachElem(v []byte, fn func(elem []byte) error) error {
	i := skipSpace(v, 0)
	if i >= len(v) || v[i] != '[' {
		return errors.New("not a JSON array")
	}
	i = skipSpace(v, i+1)
	if i < len(v) && v[i] == ']' {
		return nil
	}
	for {
		end, err := skipValue(v, i, 1)
		if err != nil {
			return err
		}
		if err := fn(v[i:end]); err != nil {
			return err
		}
		i = skipSpace(v, end)
		if i >= len(v) {
			return errSyntax
		}
		switch v[i] {
		case ',':
			i = skipSpace(v, i+1)
		case ']':
			return nil
		default:
			return errSyntax
		}
	}
}

// number reads a JSON number (or a numeric string, as Gym's indices are
// sometimes written); ok is false for anything else, null included.
func number(v []byte) (float64, bool) {
	if len(v) > 1 && v[0] == '"' {
		v = v[1 : len(v)-1]
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return f, err == nil
}

// text reads a JSON string; ok is false for anything else.
func text(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}
