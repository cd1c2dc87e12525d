package savedplan

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
)

// newKey returns a fresh age key pair: the recipient and the identity.
func newKey(t *testing.T) (string, string) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id.Recipient().String(), id.String()
}

// refused asserts that err refuses path in one line saying want.
func refused(t *testing.T, err error, path, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want a refusal saying %q", want)
	}
	msg := err.Error()
	if !strings.Contains(msg, want) || !strings.Contains(msg, path) || strings.Contains(msg, "\n") {
		t.Fatalf("error %q: want one line naming %s and saying %q", msg, path, want)
	}
}

func TestEncryptedRoundTrip(t *testing.T) {
	recipient, identity := newKey(t)
	keyFile := filepath.Join(t.TempDir(), "key.txt")
	if err := os.WriteFile(keyFile, []byte("# created: now\n"+identity+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other, _ := newKey(t)
	for _, tc := range []struct {
		name        string
		write, read Keys
	}{
		{"identity given as the key", Keys{Recipients: []string{recipient}}, Keys{Identity: identity}},
		{"identity given as a file", Keys{Recipients: []string{recipient}}, Keys{Identity: keyFile}},
		{"one of two recipients", Keys{Recipients: []string{other, recipient}}, Keys{Identity: identity}},
		{"passphrase", Keys{Passphrase: "correct horse", workFactor: 10}, Keys{Passphrase: "correct horse"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, _, _ := saveWith(t, tc.write)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, _, s := fixture(t)
			for _, clearText := range []string{"mode: a", "migrate", s.Reports["markdown"], string(s.MaskKey), `"manifest"`} {
				if bytes.Contains(data, []byte(clearText)) {
					t.Errorf("the encrypted plan holds %q in clear", clearText)
				}
			}
			got, err := Verify(path, tc.read, "app", "prod")
			if err != nil {
				t.Fatal(err)
			}
			if got.Manifest != s.Manifest || got.Reports["markdown"] != s.Reports["markdown"] || got.PlannedBy != s.PlannedBy {
				t.Fatalf("decrypted %+v", got)
			}
		})
	}
}

// TestEncryptedRefusesTampering: flipping any single byte of the file (its
// header, its body), truncating it anywhere, or decrypting with another
// key is refused in one line that names the file, before anything is
// parsed.
func TestEncryptedRefusesTampering(t *testing.T) {
	recipient, identity := newKey(t)
	_, otherIdentity := newKey(t)
	keys := Keys{Identity: identity}
	path, _, _ := saveWith(t, Keys{Recipients: []string{recipient}})
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	header := bytes.Index(orig, []byte("\n---")) // age's header ends with its MAC line
	if header < 0 {
		t.Fatal("no age header in the saved plan")
	}
	payload := header + len("\n---") + 44 // past the MAC line ("\n--- " + 43 base64 characters + "\n")
	// positions are every byte of the header, and of the payload the
	// first and last chunks' bytes and a stride between (each decryption
	// costs milliseconds).
	var positions []int
	for i := range orig {
		if i <= payload+64 || i >= len(orig)-64 || i%13 == 0 {
			positions = append(positions, i)
		}
	}
	write := func(t *testing.T, data []byte) {
		t.Helper()
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("every byte flipped", func(t *testing.T) {
		for _, i := range positions {
			data := bytes.Clone(orig)
			data[i] ^= 0x01
			write(t, data)
			_, err := Verify(path, keys, "app", "prod")
			want := "cannot decrypt"
			switch {
			case i < len(ageMagic):
				want = "not an age-encrypted plan"
			case i >= payload+16: // past the header and the payload's nonce
				want = "content was edited or truncated"
			}
			if err == nil {
				t.Fatalf("byte %d of %d flipped: accepted", i, len(orig))
			}
			refused(t, err, path, want)
		}
	})
	t.Run("truncated anywhere", func(t *testing.T) {
		for _, n := range positions {
			write(t, orig[:n])
			_, err := Verify(path, keys, "app", "prod")
			refused(t, err, path, "")
		}
	})
	t.Run("a byte appended", func(t *testing.T) {
		write(t, append(bytes.Clone(orig), 0))
		_, err := Verify(path, keys, "app", "prod")
		refused(t, err, path, "edited or truncated")
	})
	t.Run("the payload edited", func(t *testing.T) {
		data := bytes.Clone(orig)
		data[len(data)-20] ^= 0x80
		write(t, data)
		_, err := Verify(path, keys, "app", "prod")
		refused(t, err, path, "content was edited or truncated")
	})
	t.Run("another identity", func(t *testing.T) {
		write(t, orig)
		_, err := Verify(path, Keys{Identity: otherIdentity}, "app", "prod")
		refused(t, err, path, "not encrypted to the given identity")
	})
	t.Run("no identity", func(t *testing.T) {
		write(t, orig)
		_, err := Verify(path, Keys{}, "app", "prod")
		refused(t, err, path, "set "+EnvIdentity)
	})
	t.Run("no identity, --plan-unencrypted", func(t *testing.T) {
		write(t, orig)
		_, err := Verify(path, clear, "app", "prod")
		refused(t, err, path, "set "+EnvIdentity)
	})
	t.Run("an identity that is neither a key nor a file", func(t *testing.T) {
		write(t, orig)
		_, err := Verify(path, Keys{Identity: "/no/such/key"}, "app", "prod")
		if err == nil || !strings.Contains(err.Error(), EnvIdentity) {
			t.Fatalf("error %v, want one naming %s", err, EnvIdentity)
		}
	})
	t.Run("untouched, it decrypts", func(t *testing.T) {
		write(t, orig)
		if _, err := Verify(path, keys, "app", "prod"); err != nil {
			t.Fatal(err)
		}
	})
}

func TestPassphraseRefusesAnother(t *testing.T) {
	path, _, _ := saveWith(t, Keys{Passphrase: "right", workFactor: 10})
	_, err := Verify(path, Keys{Passphrase: "wrong"}, "app", "prod")
	refused(t, err, path, "cannot decrypt")
}

// TestUnencryptedNeedsTheFlag: a plan in clear is refused on write and on
// read unless --plan-unencrypted says so; nothing is written when refused.
func TestUnencryptedNeedsTheFlag(t *testing.T) {
	recipient, _ := newKey(t)
	_, _, s := fixture(t)
	for _, tc := range []struct {
		name string
		keys Keys
		want string
	}{
		{"no key", Keys{}, "no key to encrypt the plan to"},
		{"--plan-unencrypted with a recipient", Keys{Recipients: []string{recipient}, Unencrypted: true}, "choose one"},
		{"passphrase and recipient", Keys{Recipients: []string{recipient}, Passphrase: "p"}, "cannot be used together"},
		{"a recipient that is not one", Keys{Recipients: []string{"age1nope"}}, `plan recipient "age1nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plan")
			err := Write(path, s, tc.keys)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Fatalf("a refused plan was written (%v)", err)
			}
			if tc.keys.ValidateForWrite() == nil {
				t.Fatal("ValidateForWrite lets the keys through")
			}
		})
	}
	path, _, _ := save(t)
	_, err := Verify(path, Keys{Identity: "AGE-SECRET-KEY-1"}, "app", "prod")
	refused(t, err, path, "needs too")
}
