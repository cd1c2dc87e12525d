package redact

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// KeySize is the size in bytes of a Masker key.
const KeySize = 32

// Masker turns secret values into markers "(sensitive: hmac-sha256:…)": the
// first 8 bytes of HMAC-SHA256(Key, value), in hex. Equal values give equal
// markers under one key, so a report still shows whether a value changed
// and which values are alike; without the key, a marker tells nothing about
// the value (not even its length), so posting a report in a pull request
// gives no offline guessing oracle.
//
// One Masker is made per plan (NewMasker, a random key that lives only in
// the process); a saved plan that must mask alike when applied carries its
// Key. A nil *Masker masks every value as "(sensitive)", which still hides
// it but cannot be compared.
type Masker struct {
	Key []byte
}

// NewMasker returns a Masker with a fresh random key.
func NewMasker() *Masker {
	key := make([]byte, KeySize)
	// crypto/rand.Read never returns an error (Go 1.24+): it crashes the
	// program when the system has no randomness to give.
	_, _ = rand.Read(key)
	return &Masker{Key: key}
}

// unkeyedMarker is what a nil Masker prints.
const unkeyedMarker = "(sensitive)"

// markerPattern matches exactly the markers a Masker prints.
var markerPattern = regexp.MustCompile(`^\(sensitive(: hmac-sha256:[0-9a-f]{16})?\)$`)

// IsMasked reports whether s is a marker as Masker.Value prints it. A
// secret whose value is itself such a marker is left as it is: it reveals
// only a string the tool could have printed anyway.
func IsMasked(s string) bool { return markerPattern.MatchString(s) }

// Value returns the marker of a secret value.
func (m *Masker) Value(raw []byte) string {
	if m == nil || len(m.Key) == 0 {
		return unkeyedMarker
	}
	mac := hmac.New(sha256.New, m.Key)
	_, _ = mac.Write(raw)
	return "(sensitive: hmac-sha256:" + hex.EncodeToString(mac.Sum(nil)[:8]) + ")"
}

// keyedMarkers matches the keyed markers inside a longer text.
var keyedMarkers = regexp.MustCompile(`\(sensitive: hmac-sha256:[0-9a-f]{16}\)`)

// Unkeyed replaces every keyed marker in s by the unkeyed "(sensitive)".
// What must stay the same from one plan to the next (an acknowledgement's
// fingerprint) is computed on this form: a keyed marker differs under every
// key, and anything derived from the value without a key would be a
// guessing oracle.
func Unkeyed(s string) string { return keyedMarkers.ReplaceAllLiteralString(s, unkeyedMarker) }

// ContainsMasked reports whether s holds a masked value anywhere.
func ContainsMasked(s string) bool { return strings.Contains(s, "(sensitive") }
