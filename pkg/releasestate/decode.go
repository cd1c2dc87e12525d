package releasestate

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"helm.sh/helm/v3/pkg/release"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
)

// A release record is a Secret (or ConfigMap) anyone who may write Secrets
// in the namespace can forge, so it is read as hostile input: DecodeRecord
// is the one reader of a record's data, every driver and verb goes through
// it (driver.go), and each layer (base64, gzip, JSON) stops at RecordMax.

// RecordMax bounds a release record decompressed (docs/usage.md, "Files it
// reads"): the JSON Helm stored, before it is decoded.
const RecordMax = inputfile.ManifestMax

// RecordValuesMax bounds the JSON values of a record: decoded, a value
// costs tens of bytes (an interface, a map entry) where its JSON can take
// two ("0,"), so 256 MiB of JSON could hold gigabytes once decoded. A
// chart's values, templates and files are thousands of values; this is
// far above any chart's and keeps a decoded record within about 512 MiB
// besides its strings.
const RecordValuesMax = 4 << 20

// recordKeep is how much of a decompressed record the first pass keeps:
// records under it (nearly all: a chart, its values and manifest) are
// decompressed once; a bigger one is measured first, then read into a
// buffer of its exact size, so a record claiming more than RecordMax (a
// gzip bomb) costs no more memory than recordKeep.
const recordKeep = 4 << 20

// ErrUnreadable is what every error of a record that cannot be read is
// (errors.Is).
var ErrUnreadable = errors.New("release record unreadable")

// UnreadableError is a stored record that cannot be read: its key
// (sh.helm.release.v1.NAME.vREV), the release and revision its labels
// name (0 when they do not) and why. Why never quotes the record's content.
type UnreadableError struct {
	Key, Name, Namespace string
	Revision             int
	Why                  string
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("release record %s in namespace %s is unreadable: %s", e.Key, e.Namespace, e.Why)
}

func (e *UnreadableError) Is(target error) bool { return target == ErrUnreadable }

// UnreadableRecordsError is the records of a list or query that cannot be
// read; the driver returns it beside those that can (Helm's own drivers
// skip them, so a release whose every record is a bomb would vanish).
type UnreadableRecordsError struct {
	Records []*UnreadableError
}

func (e *UnreadableRecordsError) Error() string {
	if len(e.Records) == 1 {
		return e.Records[0].Error()
	}
	msgs := make([]string, len(e.Records))
	for i, r := range e.Records {
		msgs[i] = r.Error()
	}
	return fmt.Sprintf("%d release records are unreadable: %s", len(e.Records), strings.Join(msgs, "; "))
}

func (e *UnreadableRecordsError) Is(target error) bool { return target == ErrUnreadable }

// Unreadables are the unreadable records err names (none when it names
// none).
func Unreadables(err error) []*UnreadableError {
	var many *UnreadableRecordsError
	if errors.As(err, &many) {
		return many.Records
	}
	var one *UnreadableError
	if errors.As(err, &one) {
		return []*UnreadableError{one}
	}
	return nil
}

// StoredRelease is a decoded record: Helm 3's release, and the apply
// method Helm 4 stores beside it (which Helm 3's type drops).
type StoredRelease struct {
	release.Release
	ApplyMethod string `json:"apply_method"`
}

// DecodeRelease decodes a record's data as Helm's storage drivers encode
// it: base64(gzip(JSON)), or base64(JSON) for records stored before Helm
// compressed them.
func DecodeRelease(data []byte) (*StoredRelease, error) {
	var rec StoredRelease
	if err := DecodeRecord(data, &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}

// DecodeRecord decodes a record's data into v (Helm 3's or Helm 4's
// release type), each layer bounded: the base64 by what RecordMax encodes
// to, the gzip by RecordMax decompressed (measured while streaming, before
// anything of that size is held), the JSON by the bytes it came from. The
// error says which layer failed and why, never quoting the record.
func DecodeRecord(data []byte, v any) error {
	if int64(base64.StdEncoding.DecodedLen(len(data))) > RecordMax+2 {
		return fmt.Errorf("%s of base64, over the limit of %s for a release record", inputfile.Size(int64(len(data))), inputfile.Size(RecordMax))
	}
	b, err := inflate(data)
	if err != nil {
		return err
	}
	if n := jsonValues(b); n > RecordValuesMax {
		return fmt.Errorf("holds more than %d JSON values, over the limit for a release record", RecordValuesMax)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return jsonWhy(err)
	}
	return nil
}

var gzipMagic = []byte{0x1f, 0x8b, 0x08}

// inflate is the JSON of a record: base64-decoded, then decompressed when
// it starts as gzip does (Helm's own test).
func inflate(data []byte) ([]byte, error) {
	open := func() *bufio.Reader {
		return bufio.NewReader(base64.NewDecoder(base64.StdEncoding, bytes.NewReader(data)))
	}
	r := open()
	head, err := r.Peek(len(gzipMagic))
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, layerWhy(err)
	}
	if !bytes.Equal(head, gzipMagic) {
		b, err := io.ReadAll(r) // no larger than the base64 checked above
		if err != nil {
			return nil, layerWhy(err)
		}
		return b, nil
	}
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, layerWhy(err)
	}
	var kept bytes.Buffer
	n, err := kept.ReadFrom(io.LimitReader(gz, recordKeep+1))
	if err != nil {
		return nil, layerWhy(err)
	}
	if n <= recordKeep {
		return kept.Bytes(), nil
	}
	// Measure the rest without holding it, then read it again into a
	// buffer of exactly its size.
	kept = bytes.Buffer{}
	rest, err := io.Copy(io.Discard, io.LimitReader(gz, RecordMax+1-n))
	if err != nil {
		return nil, layerWhy(err)
	}
	if n += rest; n > RecordMax {
		return nil, fmt.Errorf("decompresses to more than the limit of %s for a release record", inputfile.Size(RecordMax))
	}
	if gz, err = gzip.NewReader(open()); err != nil {
		return nil, layerWhy(err)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(gz, b); err != nil {
		return nil, layerWhy(err)
	}
	return b, nil
}

// jsonValues bounds the number of values of the JSON b from above (every
// value but the first follows a comma or an array's or object's opening;
// an empty one counts one too many), without decoding it: strings are
// skipped with their escapes.
func jsonValues(b []byte) int {
	n, inString := 1, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case !inString && (c == ',' || c == '[' || c == '{'):
			n++
		}
	}
	return n
}

// layerWhy says which layer an error of inflate comes from.
func layerWhy(err error) error {
	var b64 base64.CorruptInputError
	if errors.As(err, &b64) {
		return fmt.Errorf("not base64 (at byte %d)", int64(b64))
	}
	return fmt.Errorf("not gzip: %w", err)
}

// jsonWhy says why the JSON of a record does not decode, without the
// values encoding/json quotes (a number's digits).
func jsonWhy(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("not JSON (at byte %d)", syn.Offset)
	case errors.As(err, &typ):
		kind, _, _ := strings.Cut(typ.Value, " ")
		field := typ.Field
		if field == "" {
			field = "the top level"
		}
		return fmt.Errorf("wrong type: a JSON %s in %s, where a %s is expected", kind, field, typ.Type)
	}
	return fmt.Errorf("not a release: %w", err)
}
