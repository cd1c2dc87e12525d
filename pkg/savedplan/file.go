package savedplan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"filippo.io/age"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// The environment variables that carry keys: CI systems hand secrets to jobs
// as variables, never as flags that would show in logs.
const (
	EnvRecipients = "SAFE_UPGRADE_PLAN_RECIPIENTS"
	EnvIdentity   = "SAFE_UPGRADE_PLAN_IDENTITY"
	EnvPassphrase = "SAFE_UPGRADE_PLAN_PASSPHRASE"
)

// ageMagic starts every binary age file; a file without it was written in
// clear (or its first bytes were edited).
const ageMagic = "age-encryption.org/"

// Keys are what a saved plan is encrypted to (Write) or decrypted with
// (Verify, Open): age recipients (age1…) and identities (AGE-SECRET-KEY-1…),
// or a passphrase (age's scrypt recipient). Unencrypted (--plan-unencrypted)
// allows a plan in clear, written or read; nothing else does.
type Keys struct {
	Recipients []string
	// Identity is a path to an identity file, or the identity itself: a
	// key, or what age-keygen writes (comment lines, blank lines, the key).
	Identity    string
	Passphrase  string
	Unencrypted bool
	// Warnings receives a line when an identity file is readable by group
	// or others (nil: no warning).
	Warnings io.Writer
	// workFactor lowers scrypt's cost in tests (0: age's default).
	workFactor int
}

// KeysFromEnv are the keys the environment getenv reads gives: recipients
// separated by commas, spaces or new lines, the identity, the passphrase;
// recipients are added to those of flags.
func KeysFromEnv(getenv func(string) string, recipients []string, unencrypted bool) Keys {
	k := Keys{Recipients: append([]string(nil), recipients...), Identity: strings.TrimSpace(getenv(EnvIdentity)),
		Passphrase: getenv(EnvPassphrase), Unencrypted: unencrypted}
	k.Recipients = append(k.Recipients, strings.FieldsFunc(getenv(EnvRecipients), func(r rune) bool {
		return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '\r'
	})...)
	return k
}

// ValidateForWrite refuses keys a plan cannot be written with: none (unless
// Unencrypted), a key together with Unencrypted, a passphrase together with
// recipients (age's scrypt recipient stands alone), a recipient that does
// not parse.
func (k Keys) ValidateForWrite() error {
	_, err := k.recipients()
	return err
}

func (k Keys) recipients() ([]age.Recipient, error) {
	keyed := len(k.Recipients) > 0 || k.Passphrase != ""
	switch {
	case k.Unencrypted && keyed:
		return nil, errors.New("--plan-unencrypted writes the plan in clear, yet a key is given (--plan-recipient, " + EnvRecipients + " or " + EnvPassphrase + "): choose one")
	case k.Unencrypted:
		return nil, nil
	case !keyed:
		return nil, errors.New("--plan-out: no key to encrypt the plan to (it holds Secret values): give --plan-recipient age1… (or " + EnvRecipients + ") or " + EnvPassphrase + "; --plan-unencrypted writes it in clear")
	case k.Passphrase != "" && len(k.Recipients) > 0:
		return nil, errors.New("--plan-out: " + EnvPassphrase + " and recipients cannot be used together (age encrypts to a passphrase alone); choose one")
	case k.Passphrase != "":
		r, err := age.NewScryptRecipient(k.Passphrase)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvPassphrase, err)
		}
		if k.workFactor > 0 {
			r.SetWorkFactor(k.workFactor)
		}
		return []age.Recipient{r}, nil
	}
	out := make([]age.Recipient, 0, len(k.Recipients))
	for _, s := range k.Recipients {
		r, err := age.ParseX25519Recipient(s)
		if err != nil {
			return nil, fmt.Errorf("plan recipient %q: not an age recipient (age1…): %w", s, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// identities are the keys a plan is decrypted with, from the identity (a
// file path or the key itself) and the passphrase.
func (k Keys) identities() ([]age.Identity, error) {
	var out []age.Identity
	if id := k.Identity; id != "" {
		text := id
		if !isIdentityText(id) {
			data, err := inputfile.Read(id, "an identity file", inputfile.IdentityMax)
			if err != nil {
				// The value may be a mistyped key: never echo it.
				return nil, fmt.Errorf("%s: neither an age key (AGE-SECRET-KEY-1…, alone or as age-keygen writes it) nor a readable identity file: %w", EnvIdentity, cause(err))
			}
			k.warnIfShared(id)
			text = string(data)
		}
		ids, err := age.ParseIdentities(strings.NewReader(text))
		if err != nil {
			return nil, fmt.Errorf("%s: no age identity in it (%v)", EnvIdentity, oneLine(err))
		}
		out = append(out, ids...)
	}
	if k.Passphrase != "" {
		id, err := age.NewScryptIdentity(k.Passphrase)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", EnvPassphrase, err)
		}
		out = append(out, id)
	}
	return out, nil
}

// isIdentityText reports whether the identity's value is the identity
// itself rather than a path: a line of it is an age key, or it has more
// than one line (age-keygen's output: "# created: …", "# public key: …",
// the key), which no path has.
func isIdentityText(v string) bool {
	if strings.ContainsAny(v, "\n\r") {
		return true
	}
	return strings.HasPrefix(strings.ToUpper(strings.TrimSpace(v)), "AGE-SECRET-KEY-")
}

// warnIfShared warns when the identity file at path can be read by group
// or others: whoever can read it can decrypt every plan (Windows has no
// such bits).
func (k Keys) warnIfShared(path string) {
	fi, err := os.Stat(path)
	if k.Warnings == nil || err != nil || runtime.GOOS == "windows" || fi.Mode().Perm()&0o044 == 0 {
		return
	}
	fmt.Fprintf(k.Warnings, "WARNING: %s: the identity file %s is readable by group or others (mode %04o): whoever reads it can decrypt the plans; chmod 600 %s\n",
		EnvIdentity, path, fi.Mode().Perm(), path)
}

// Write seals p and writes it to path (mode 0600), encrypted to keys'
// recipients, or in clear with keys.Unencrypted. It writes nothing when the
// keys are not usable.
func Write(path string, p *Plan, keys Keys) error {
	recipients, err := keys.recipients()
	if err != nil {
		return err
	}
	p.APIVersion, p.Kind = plan.APIVersion, Kind
	if p.Seal, err = p.digest(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if len(recipients) > 0 {
		var buf bytes.Buffer
		w, err := age.Encrypt(&buf, recipients...)
		if err != nil {
			return fmt.Errorf("--plan-out: encrypting: %w", err)
		}
		if _, err := w.Write(data); err != nil {
			return fmt.Errorf("--plan-out: encrypting: %w", err)
		}
		if err := w.Close(); err != nil {
			return fmt.Errorf("--plan-out: encrypting: %w", err)
		}
		data = buf.Bytes()
	}
	if err := writeFile(path, data); err != nil {
		return fmt.Errorf("--plan-out %w", err)
	}
	return nil
}

// CheckOut refuses a --plan-out path that a plan is never written to (a
// symbolic link, a directory, anything but a regular file or nothing), so
// that the run stops before it plans; Write checks again.
func CheckOut(path string) error {
	if err := checkOut(path); err != nil {
		return fmt.Errorf("--plan-out %w", err)
	}
	return nil
}

func checkOut(path string) error {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().IsRegular() {
		return nil // the write says what is wrong with a path that cannot be written
	}
	what := "a symbolic link; the plan is not written through it: remove it or name the file it points to"
	switch {
	case fi.IsDir():
		what = "a directory; the plan goes to a file: name one"
	case fi.Mode()&fs.ModeSymlink == 0:
		what = "not a regular file (" + fi.Mode().Type().String() + "); the plan goes to a file: name one"
	}
	return fmt.Errorf("%s: %s", path, what)
}

// writeFile puts data at path, mode 0600, without a moment at which anyone
// else could choose where it goes: it is written to a file created
// exclusively in path's folder (os.CreateTemp: O_EXCL, mode 0600, so never
// through a link and never an existing file's mode), synced, then renamed
// over path. A symbolic link at path is refused, so the user decides about
// it; one planted after that check is replaced by the rename, never written
// through. A directory at path is refused, never removed (rename cannot
// replace one). Every error starts with path.
func writeFile(path string, data []byte) (err error) {
	if err := checkOut(path); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(0o600); err == nil { // CreateTemp's mode, said again
		if _, err = tmp.Write(data); err == nil {
			err = tmp.Sync()
		}
	}
	if err != nil {
		return fmt.Errorf("%s: writing %s: %w", path, tmp.Name(), err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("%s: writing %s: %w", path, tmp.Name(), err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		var le *os.LinkError
		if errors.As(err, &le) {
			err = le.Err
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Verify is the one way a saved plan is read for applying: Open, then the
// release check (the plan was made for release name in namespace). Every
// error names path and says why in one line.
func Verify(path string, keys Keys, name, namespace string) (*Plan, error) {
	s, err := Open(path, keys)
	if err != nil {
		return nil, fmt.Errorf("--plan %w", err)
	}
	if s.Release.Name != name || s.Release.Namespace != namespace {
		return nil, fmt.Errorf("--plan %s was made for release %s/%s, not %s/%s", path,
			s.Release.Namespace, s.Release.Name, namespace, name)
	}
	return s, nil
}

// Open reads the saved plan at path (its errors start with path): decrypts and authenticates it with
// keys (a plan in clear only with keys.Unencrypted), then decodes it
// strictly (unknown fields, nulls and values of the wrong type are refused,
// naming the field) and checks its seal. Nothing is parsed before age
// authenticated the whole file.
func Open(path string, keys Keys) (*Plan, error) {
	data, err := inputfile.Read(path, "a saved plan", inputfile.PlanMax)
	if err != nil {
		return nil, err // it names path, first
	}
	inClear := !bytes.HasPrefix(data, []byte(ageMagic))
	if data, err = decrypt(data, keys); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s, err := decodeStrict(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.InClear = inClear
	if s.APIVersion != plan.APIVersion || s.Kind != Kind {
		return nil, fmt.Errorf("%s: not a saved plan (want apiVersion %s, kind %s)", path, plan.APIVersion, Kind)
	}
	if d, err := s.digest(); err != nil || d != s.Seal {
		return nil, fmt.Errorf("%s: the file was changed after it was saved (its seal does not match its content); plan again", path)
	}
	return s, nil
}

// decrypt returns the plan's JSON: data decrypted and authenticated, or data
// itself when it is in clear and keys allow that.
func decrypt(data []byte, keys Keys) ([]byte, error) {
	if !bytes.HasPrefix(data, []byte(ageMagic)) {
		if keys.Unencrypted {
			return data, nil
		}
		return nil, errors.New("not an age-encrypted plan (no age header): it was edited, or written in clear with --plan-unencrypted, which reading it needs too")
	}
	ids, err := keys.identities()
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, errors.New("the plan is encrypted: set " + EnvIdentity + " (an identity file or the key) or " + EnvPassphrase + " to decrypt it")
	}
	r, err := age.Decrypt(bytes.NewReader(data), ids...)
	if err != nil {
		var none *age.NoIdentityMatchError
		if errors.As(err, &none) {
			return nil, fmt.Errorf("cannot decrypt: not encrypted to the given identity or passphrase, or its header was edited (%s)", oneLine(err))
		}
		return nil, fmt.Errorf("cannot decrypt: its header is damaged or was edited (%s)", oneLine(err))
	}
	// Age's payload is no larger than the file, which was bounded; bounded
	// again all the same, as a stream.
	plain, err := inputfile.ReadAtMost(r, inputfile.PlanMax)
	if errors.Is(err, inputfile.ErrTooLarge) {
		return nil, fmt.Errorf("cannot decrypt: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot decrypt: its content was edited or truncated; age refuses it (%s)", oneLine(err))
	}
	return plain, nil
}

// cause is what inputfile says of a file without the file's name (the
// identity's value may be a mistyped key).
func cause(err error) error {
	for _, c := range []error{inputfile.ErrNotRegular, inputfile.ErrTooLarge, fs.ErrNotExist, fs.ErrPermission} {
		if errors.Is(err, c) {
			return c
		}
	}
	return errors.New("cannot read it")
}

// oneLine keeps an error on one line: exit-1 messages are one line each.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
