package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"

	"helm.sh/helm/v3/pkg/release"
)

// SavedKind marks a saved plan file.
const SavedKind = "SavedPlan"

// Saved is a plan written by --plan-out and applied by --plan: the exact
// render that was reviewed and what it was reviewed against, so that a later
// apply sends exactly it, or refuses when anything moved. It holds the
// rendered manifest, Secret values included: treat the file like a Terraform
// plan (written with mode 0600).
type Saved struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Release    struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		// LastRevision is the release's newest revision when planned (0: install).
		LastRevision int `json:"lastRevision"`
	} `json:"release"`
	ChartRef     string          `json:"chartRef"`
	ChartDigest  string          `json:"chartDigest"`
	ValuesDigest string          `json:"valuesDigest"`
	Manifest     string          `json:"manifest"`
	Hooks        []*release.Hook `json:"hooks,omitempty"`
	Notes        string          `json:"notes,omitempty"`
	// Objects are the live resourceVersions of the objects the plan changes.
	Objects []SavedObject `json:"objects"`
	// Acknowledged are the destructive changes acknowledged when planning.
	Acknowledged []SavedAck `json:"acknowledged,omitempty"`
	// MaskKey is the key the plan's Secret markers were made with
	// (redact.Masker): the apply masks alike, so the live states it pins
	// compare equal. Issue 10 bridge until the sealed plan carries it.
	MaskKey []byte `json:"maskKey,omitempty"`
}

// SavedObject pins the live state a change was planned against. Apply
// compares the state digest (the object without status and server-managed
// fields): a status update by a controller does not make the plan stale.
type SavedObject struct {
	Object          string `json:"object"`
	ResourceVersion string `json:"resourceVersion"`
	StateDigest     string `json:"stateDigest"`
}

// StateDigest hashes the live object a change was planned against.
func StateDigest(c Change) string {
	if c.Before == nil {
		return ""
	}
	data, _ := json.Marshal(c.Before.Object)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// SavedAck is an acknowledgement recorded in a saved plan.
type SavedAck struct {
	Kind        string `json:"kind"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name"`
	Fingerprint string `json:"fingerprint"`
}

// Write stores s at path, readable by its owner only.
func (s *Saved) Write(path string) error {
	s.APIVersion, s.Kind = APIVersion, SavedKind
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	// Remove first: WriteFile keeps the mode of an existing file.
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("--plan-out: %w", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("--plan-out: %w", err)
	}
	return nil
}

// ReadSaved loads a saved plan.
func ReadSaved(path string) (*Saved, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--plan: %w", err)
	}
	var s Saved
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("--plan %s: %w", path, err)
	}
	if s.APIVersion != APIVersion || s.Kind != SavedKind {
		return nil, fmt.Errorf("--plan %s: not a saved plan (want apiVersion %s, kind %s)", path, APIVersion, SavedKind)
	}
	return &s, nil
}
