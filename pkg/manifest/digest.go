package manifest

import (
	"bytes"
	"crypto/sha256"
)

// digest is what tells a document's text from another's (Parsed): the
// SHA-256 of its text without the line breaks that end it. Helm 4 stores a
// release's manifest with a blank line after each document, which a render
// does not give, so no document of a Helm 4 release was shared with the
// new render's (its whole last manifest parsed again, 0.2 CPU-s at 5000
// objects). Line breaks that end a document are not part of its content
// unless a block scalar keeps them (the "+" chomping indicator): a document
// with one anywhere keeps them in its digest.
func digest(raw []byte) [sha256.Size]byte {
	if !keepsBreaks(raw) {
		raw = bytes.TrimRight(raw, "\r\n")
	}
	return sha256.Sum256(raw)
}

// keepsBreaks reports whether raw may hold a block scalar that keeps its
// final line breaks: "|" or ">" then indentation digits, if any, then "+"
// (anywhere, in a value too: a false match only keeps the breaks).
func keepsBreaks(raw []byte) bool {
	for i := range raw {
		if raw[i] != '|' && raw[i] != '>' {
			continue
		}
		j := i + 1
		for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
			j++
		}
		if j < len(raw) && raw[j] == '+' {
			return true
		}
	}
	return false
}
