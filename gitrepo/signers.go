package gitrepo

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// AllowedSigner is one line of an allowed-signers file (ssh-keygen(1),
// ALLOWED SIGNERS; git's gpg.ssh.allowedSignersFile).
type AllowedSigner struct {
	// Line is the 1-based line number.
	Line       int
	Principals []string
	// Options are the line's options as written ("" when none).
	Options string
	KeyType string
	Key     string
}

// SignersError is a line of an allowed-signers file that cannot be used.
type SignersError struct {
	Line int
	Err  error
}

func (e *SignersError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

func (e *SignersError) Unwrap() error { return e.Err }

// maxSignersSize caps an allowed-signers file.
const maxSignersSize = 1 << 20

// ParseAllowedSigners reads an allowed-signers file strictly: every line
// that is not blank or a # comment is "principals [options] keytype key
// [comment]" with a key that decodes to its type. Principals are exact
// names (a pattern would let one key sign as many approvers); the options
// are ssh-keygen's (cert-authority, namespaces, valid-after,
// valid-before). An error is a *SignersError naming the line.
func ParseAllowedSigners(data []byte) ([]AllowedSigner, error) {
	if len(data) > maxSignersSize {
		return nil, fmt.Errorf("%d bytes exceeds the %d byte limit", len(data), maxSignersSize)
	}
	var out []AllowedSigner
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseSignerLine(line)
		if err != nil {
			return nil, &SignersError{Line: i + 1, Err: err}
		}
		s.Line = i + 1
		out = append(out, s)
	}
	return out, nil
}

func parseSignerLine(line string) (AllowedSigner, error) {
	var s AllowedSigner
	toks, err := splitQuoted(line)
	if err != nil {
		return s, err
	}
	if len(toks) < 3 {
		return s, errors.New("want \"principals [options] keytype key\"")
	}
	for _, p := range strings.Split(toks[0], ",") {
		if p == "" || strings.ContainsAny(p, "*?!\"") {
			return s, fmt.Errorf("principal %q: want an exact name (no pattern, no empty entry)", p)
		}
		s.Principals = append(s.Principals, p)
	}
	k := 1
	if !isKeyType(toks[1]) {
		if err := checkSignerOptions(toks[1]); err != nil {
			return s, err
		}
		s.Options, k = toks[1], 2
	}
	if len(toks) <= k+1 || !isKeyType(toks[k]) {
		return s, errors.New("no key type (ssh-ed25519, ecdsa-sha2-*, ssh-rsa, sk-*) followed by a key")
	}
	s.KeyType, s.Key = toks[k], toks[k+1]
	blob, err := base64.StdEncoding.DecodeString(s.Key)
	if err != nil {
		return s, fmt.Errorf("%s key: not base64: %w", s.KeyType, err)
	}
	if len(blob) < 4 || int(binary.BigEndian.Uint32(blob)) > len(blob)-4 ||
		!bytes.Equal(blob[4:4+binary.BigEndian.Uint32(blob)], []byte(s.KeyType)) {
		return s, fmt.Errorf("the key is not a %s key", s.KeyType)
	}
	return s, nil
}

func isKeyType(t string) bool {
	return strings.HasPrefix(t, "ssh-") || strings.HasPrefix(t, "ecdsa-sha2-") || strings.HasPrefix(t, "sk-")
}

// checkSignerOptions checks a comma-separated option list.
func checkSignerOptions(opts string) error {
	parts, err := splitOutsideQuotes(opts, ',')
	if err != nil {
		return err
	}
	for _, o := range parts {
		name, value, hasValue := strings.Cut(o, "=")
		switch strings.ToLower(name) {
		case "cert-authority":
			if hasValue {
				return fmt.Errorf("option %q takes no value", name)
			}
		case "namespaces", "valid-after", "valid-before":
			if !hasValue || len(value) < 2 || value[0] != '"' || value[len(value)-1] != '"' {
				return fmt.Errorf("option %s: want %s=\"...\"", name, name)
			}
		default:
			return fmt.Errorf("unknown option %q (or a key type that is not one)", name)
		}
	}
	return nil
}

// splitQuoted splits a line at blanks outside double quotes.
func splitQuoted(line string) ([]string, error) {
	var toks []string
	var cur strings.Builder
	quoted := false
	for _, c := range line {
		switch {
		case c == '"':
			quoted = !quoted
			cur.WriteRune(c)
		case (c == ' ' || c == '\t') && !quoted:
			if cur.Len() > 0 {
				toks = append(toks, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(c)
		}
	}
	if quoted {
		return nil, errors.New("unterminated quote")
	}
	if cur.Len() > 0 {
		toks = append(toks, cur.String())
	}
	return toks, nil
}

// splitOutsideQuotes splits s at sep outside double quotes.
func splitOutsideQuotes(s string, sep rune) ([]string, error) {
	var parts []string
	start, quoted := 0, false
	for i, c := range s {
		switch {
		case c == '"':
			quoted = !quoted
		case c == sep && !quoted:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	if quoted {
		return nil, errors.New("unterminated quote")
	}
	return append(parts, s[start:]), nil
}
