package gate

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/safe-upgrade/helm-safe-upgrade/internal/inputfile"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/manifest"
	"github.com/safe-upgrade/helm-safe-upgrade/pkg/plan"
	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/golden"
)

func assertGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Assert(t, filepath.Join("testdata", name), []byte(got))
}

func fixture() *plan.Plan {
	sts := plan.Change{ID: manifest.ObjectID{Group: "apps", Kind: "StatefulSet", Namespace: "prod", Name: "db"},
		Action: plan.ActionUpdate, Class: plan.ClassRecreateRequired, Destructive: true,
		Reasons: []plan.Reason{{Path: "spec.volumeClaimTemplates[0].spec.resources.requests.storage", Message: "field is immutable", Source: plan.SourceServer, Before: "1Gi", After: "2Gi"}}}
	pvc := plan.Change{ID: manifest.ObjectID{Kind: "PersistentVolumeClaim", Namespace: "prod", Name: "cache"},
		Action: plan.ActionDelete, Destructive: true,
		Reasons: []plan.Reason{{Message: "deleting a PersistentVolumeClaim deletes its volume's data (reclaimPolicy Delete)", Source: plan.SourceHelm}}}
	bad := plan.Change{ID: manifest.ObjectID{Group: "apps", Kind: "Deployment", Namespace: "prod", Name: "web"},
		Action: plan.ActionUpdate, Class: plan.ClassInvalid, Destructive: true, Blocking: true,
		Reasons: []plan.Reason{{Path: "spec.template.metadata.labels", Message: "Invalid value: ...: `selector` does not match template `labels`", Source: plan.SourceServer}}}
	cm := plan.Change{ID: manifest.ObjectID{Kind: "ConfigMap", Namespace: "prod", Name: "settings"}, Action: plan.ActionUpdate, Class: plan.ClassInPlace}
	p := &plan.Plan{Release: plan.Release{Name: "shop", Namespace: "prod"}, Changes: []plan.Change{sts, pvc, bad, cm}}
	for i := range p.Changes {
		if p.Changes[i].Destructive {
			p.Changes[i].Fingerprint = plan.Fingerprint(p.Changes[i])
		}
	}
	return p
}

func TestEvaluate(t *testing.T) {
	fp := func(p *plan.Plan, i int) string { return p.Changes[i].Fingerprint }
	tests := []struct {
		name    string
		acks    func(p *plan.Plan) []string
		ackAll  bool
		unacked int
		stale   int
		blocked bool
	}{
		{name: "no acks", acks: func(*plan.Plan) []string { return nil }, unacked: 2, blocked: true},
		{name: "ack by kind/name", acks: func(*plan.Plan) []string { return []string{"StatefulSet/db", "pvc/prod/cache"} }, unacked: 1, blocked: true},
		{name: "ack by kind.group/ns/name@fingerprint", acks: func(p *plan.Plan) []string {
			return []string{"statefulset.apps/prod/db@" + fp(p, 0), "PersistentVolumeClaim/prod/cache@" + fp(p, 1)}
		}, blocked: true},
		{name: "stale fingerprint does not count", acks: func(p *plan.Plan) []string {
			return []string{"StatefulSet/prod/db@000000000000", "PersistentVolumeClaim/prod/cache"}
		}, unacked: 1, stale: 1, blocked: true},
		{name: "ack-all still refuses invalid", acks: func(*plan.Plan) []string { return nil }, ackAll: true, blocked: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := fixture()
			acks, err := ParseAcks(tt.acks(p))
			if err != nil {
				t.Fatal(err)
			}
			d := Evaluate(p, acks, tt.ackAll)
			if len(d.Unacked) != tt.unacked || len(d.Stale) != tt.stale || d.Blocked() != tt.blocked || len(d.Refused) != 1 {
				t.Fatalf("decision: unacked %d stale %d refused %d blocked %v; want %d %d 1 %v",
					len(d.Unacked), len(d.Stale), len(d.Refused), d.Blocked(), tt.unacked, tt.stale, tt.blocked)
			}
			if p.Changes[2].Acknowledged {
				t.Fatal("an invalid change was acknowledged")
			}
		})
	}
}

func TestEvaluateLetsThroughWhenAllAcked(t *testing.T) {
	p := fixture()
	p.Changes = p.Changes[:2] // without the invalid change
	acks, _ := ParseAcks([]string{"StatefulSet/prod/db@" + p.Changes[0].Fingerprint, "PersistentVolumeClaim/cache"})
	d := Evaluate(p, acks, false)
	if d.Blocked() || p.Changes[0].AckedBy != "flag" || p.Changes[1].AckedBy != "flag" || !p.Changes[0].Acknowledged || !p.Changes[1].Acknowledged {
		t.Fatalf("want both acknowledged by flag, got %+v", d)
	}
}

func TestParseAcksRejectsBadInput(t *testing.T) {
	for _, v := range []string{"StatefulSet", "a/b/c/d", "StatefulSet//db", "/db"} {
		if _, err := ParseAcks([]string{v}); err == nil || !strings.Contains(err.Error(), v) {
			t.Errorf("ParseAcks(%q) = %v, want an error naming it", v, err)
		}
	}
}

func TestReadAckFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "acks.yaml")
	os.WriteFile(good, []byte("- kind: StatefulSet\n  namespace: prod\n  name: db\n  fingerprint: abc\n  reason: reviewed in PR 42\n"), 0o644)
	acks, err := ReadAckFile(good)
	if err != nil || len(acks.list) != 1 || acks.list[0].Via != "ack-file" || acks.list[0].Fingerprint != "abc" {
		t.Fatalf("ReadAckFile = %+v, %v", acks, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("- kind: StatefulSet\n  nmae: db\n"), 0o644)
	if _, err := ReadAckFile(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("unknown field: want an error naming %s, got %v", bad, err)
	}
	// More entries than an ack file may hold, within its size: refused by
	// count before any entry is looked at.
	many := filepath.Join(dir, "many.yaml")
	os.WriteFile(many, []byte(strings.Repeat("- {kind: a, name: b}\n", inputfile.AckEntriesMax+1)), 0o644)
	if _, err := ReadAckFile(many); err == nil || !strings.Contains(err.Error(), "10001 entries, more than the 10000") {
		t.Fatalf("%d entries: want an error counting them, got %v", inputfile.AckEntriesMax+1, err)
	}
	// A link to /dev/zero: refused by type, not read until memory runs out.
	zero := filepath.Join(dir, "zero.yaml")
	os.Symlink("/dev/zero", zero)
	if _, err := ReadAckFile(zero); err == nil || !strings.Contains(err.Error(), "--ack-file "+zero+` (a link to "/dev/zero"): a character device, not a regular file`) {
		t.Fatalf("a link to /dev/zero: want an error naming it and its type, got %v", err)
	}
}

func TestBlockedMessagesGolden(t *testing.T) {
	p := fixture()
	acks, _ := ParseAcks([]string{"StatefulSet/prod/db@000000000000", "Secret/nothing"})
	d := Evaluate(p, acks, false)
	assertGolden(t, "blocked.txt", strings.Join(d.Messages(), "\n")+"\n")
}

// scripted answers like a person would, echoing the prompt as a terminal shows it.
type scripted struct {
	answer string
	out    *bytes.Buffer
}

func (s scripted) Input(prompt string) (string, error) {
	s.out.WriteString(prompt + s.answer + "\n")
	return s.answer, nil
}

func TestConfirm(t *testing.T) {
	for _, tt := range []struct {
		answer string
		yes    bool
	}{{"shop", true}, {"yes", false}, {"", false}, {" shop ", true}} {
		p := fixture()
		p.Changes = p.Changes[:2]
		d := Evaluate(p, &Acks{}, false)
		var out bytes.Buffer
		ok, err := Confirm(scripted{tt.answer, &out}, &out, "shop", &d)
		if err != nil || ok != tt.yes || d.Blocked() == tt.yes {
			t.Fatalf("answer %q: ok %v blocked %v err %v", tt.answer, ok, d.Blocked(), err)
		}
		if tt.answer == "shop" {
			assertGolden(t, "prompt.txt", out.String())
		}
	}
}

// TestConfirmNamesTheOperation: the prompt says what is applied: an
// upgrade (helm upgrade --install's install too), a rollback.
func TestConfirmNamesTheOperation(t *testing.T) {
	for op, want := range map[plan.Operation]string{"": "This upgrade makes", plan.OperationInstall: "This upgrade makes",
		plan.OperationUpgrade: "This upgrade makes", plan.OperationRollback: "This rollback makes",
		plan.OperationUninstall: "This uninstall makes"} {
		p := fixture()
		p.Release.Operation = op
		d := Evaluate(p, &Acks{}, false)
		var out bytes.Buffer
		if _, err := Confirm(scripted{"no", &out}, &out, "shop", &d); err != nil || !strings.Contains(out.String(), want) {
			t.Errorf("operation %q: %v, want %q in:\n%s", op, err, want, out.String())
		}
	}
}

func TestLinePrompter(t *testing.T) {
	var out bytes.Buffer
	got, err := NewLinePrompter(strings.NewReader("shop\r\nnext\n"), &out).Input("name? ")
	if err != nil || got != "shop" || out.String() != "name? " {
		t.Fatalf("Input = %q, %v; prompt %q", got, err, out.String())
	}
}

// TestEvaluateBlockers: a plan-wide blocker blocks with every change
// acknowledged, and the message says nothing was written.
func TestEvaluateBlockers(t *testing.T) {
	p := &plan.Plan{Blockers: []string{"the release record is too large"}}
	d := Evaluate(p, &Acks{}, true)
	if !d.Blocked() {
		t.Fatal("a plan-wide blocker did not block")
	}
	if msgs := strings.Join(d.Messages(), "\n"); !strings.Contains(msgs, "Refused: the release record is too large; nothing was written") {
		t.Fatalf("messages %q", msgs)
	}
}
