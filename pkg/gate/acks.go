// Package gate decides whether an upgrade may proceed: every destructive
// change must be acknowledged, by flag, by a reviewed ack file, by the person
// at the prompt, or (emergencies) all at once.
package gate

import (
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
)

// Ack acknowledges one destructive change.
type Ack struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Fingerprint, when set, binds the ack to the exact change reviewed.
	Fingerprint string `json:"fingerprint,omitempty"`
	Reason      string `json:"reason,omitempty"`
	// Via says where the ack came from (flag, ack file), for the audit trail.
	Via string `json:"-"`
	// anyNamespace: given as KIND/NAME.
	anyNamespace bool
}

func (a Ack) String() string {
	s := a.Kind + "/"
	if !a.anyNamespace && a.Namespace != "" {
		s += a.Namespace + "/"
	}
	s += a.Name
	if a.Fingerprint != "" {
		s += "@" + a.Fingerprint
	}
	return s
}

// matches reports whether the ack names the object (fingerprint aside).
// Kind is matched case-insensitively, as Kind or Kind.group.
func (a Ack) matches(id manifest.ObjectID) bool {
	kind := strings.ToLower(a.Kind)
	if kind != strings.ToLower(id.Kind) && kind != strings.ToLower(id.Kind+"."+id.Group) {
		return false
	}
	return a.Name == id.Name && (a.anyNamespace || a.Namespace == id.Namespace)
}

// Acks is the set of acknowledgements of one run.
type Acks struct {
	list []Ack
}

// Add appends other's acks.
func (s *Acks) Add(other *Acks) { s.list = append(s.list, other.list...) }

// Strings are the acks as Decision.Unused names them, in order.
func (s *Acks) Strings() []string {
	out := make([]string, 0, len(s.list))
	for _, a := range s.list {
		out = append(out, a.String())
	}
	return out
}

// ParseAcks parses --ack values.
func ParseAcks(values []string) (*Acks, error) {
	s := &Acks{}
	for _, v := range values {
		a, err := parseAck(v)
		if err != nil {
			return nil, fmt.Errorf("--ack %q: %w", v, err)
		}
		a.Via = "flag"
		s.list = append(s.list, a)
	}
	return s, nil
}

func parseAck(v string) (Ack, error) {
	ref, fp, _ := strings.Cut(v, "@")
	parts := strings.Split(ref, "/")
	var a Ack
	switch len(parts) {
	case 2:
		a = Ack{Kind: parts[0], Name: parts[1], anyNamespace: true}
	case 3:
		a = Ack{Kind: parts[0], Namespace: parts[1], Name: parts[2]}
	default:
		return a, errors.New("want KIND/NAME or KIND/NAMESPACE/NAME, optionally @FINGERPRINT")
	}
	for _, p := range parts {
		if p == "" {
			return a, errors.New("empty KIND, NAMESPACE or NAME")
		}
	}
	a.Fingerprint = fp
	return a, nil
}

// ReadAckFile reads a YAML list of acks, the form meant to be committed and
// reviewed in a pull request: a regular file of at most
// inputfile.AckFileMax bytes and inputfile.AckEntriesMax entries.
func ReadAckFile(path string) (*Acks, error) {
	data, err := inputfile.Read(path, "an ack file", inputfile.AckFileMax)
	if err != nil {
		return nil, fmt.Errorf("--ack-file %w", err)
	}
	var list []Ack
	if err := yaml.UnmarshalStrict(data, &list); err != nil {
		return nil, fmt.Errorf("--ack-file %s: %w", path, err)
	}
	if len(list) > inputfile.AckEntriesMax {
		return nil, fmt.Errorf("--ack-file %s: %d entries, more than the %d an ack file may hold", path, len(list), inputfile.AckEntriesMax)
	}
	for i := range list {
		a := &list[i]
		if a.Kind == "" || a.Name == "" {
			return nil, fmt.Errorf("--ack-file %s: entry %d: kind and name are required", path, i+1)
		}
		a.anyNamespace = a.Namespace == ""
		a.Via = "ack-file"
	}
	return &Acks{list: list}, nil
}

// Bound turns recorded acknowledgements (a saved plan's) into acks that
// count only for the same changes: each names its object exactly and is
// bound to its fingerprint. via names where they came from.
func Bound(list []Ack, via string) *Acks {
	s := &Acks{}
	for _, a := range list {
		s.list = append(s.list, Ack{Kind: a.Kind, Namespace: a.Namespace, Name: a.Name, Fingerprint: a.Fingerprint, Via: via})
	}
	return s
}

// Given returns the acknowledged destructive changes of p as exact acks, as
// a saved plan records them.
func Given(p *plan.Plan) []Ack {
	var out []Ack
	for _, c := range p.Changes {
		if c.Destructive && c.Acknowledged {
			out = append(out, Ack{Kind: c.ID.Kind, Namespace: c.ID.Namespace, Name: c.ID.Name, Fingerprint: c.Fingerprint})
		}
	}
	return out
}
