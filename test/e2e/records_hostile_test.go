package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/safe-upgrade/helm-safe-upgrade/test/kit/testcluster"
)

// recordRSSLimit is the peak RSS a whole run may reach on a release record
// that claims 760 MiB (issue 50): the bound (256 MiB decompressed) is
// never held, so the process stays near its ordinary size.
const recordRSSLimit = 400 << 20

// gzipBombRecord is a release record of about 1 MiB (what a Secret holds)
// that inflates to about 760 MiB: valid gzip of a JSON release of name
// whose manifest is one long run of a letter.
func gzipBombRecord(name string) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	io.WriteString(w, `{"name":"`+name+`","version":1,"namespace":"x","info":{"status":"deployed"},"manifest":"`)
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for range 760 {
		w.Write(chunk)
	}
	io.WriteString(w, `"}`)
	w.Close()
	return []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))
}

// encodedRecord is base64(gzip(json)), as Helm stores a record.
func encodedRecord(json string) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	io.WriteString(w, json)
	w.Close()
	return []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))
}

// forgeRecord stores data as revision rev of release name in ns, as anyone
// who may write Secrets there can.
func forgeRecord(t *testing.T, c *testcluster.Cluster, ns, name, rev string, data []byte) {
	t.Helper()
	_, err := c.Clientset(t).CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1." + name + ".v" + rev,
			Labels: map[string]string{"owner": "helm", "name": name, "version": rev, "status": "deployed"}},
		Type: "helm.sh/release.v1",
		Data: map[string][]byte{"release": data},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("forging record %s.v%s: %v", name, rev, err)
	}
}

// measured is a whole run of the tool: its output, exit code and peak RSS.
type measured struct {
	result
	rss int64
}

// runMeasured runs the built tool as a process and measures its peak RSS
// (wait4's rusage): no time limit, go test -timeout bounds it.
func runMeasured(t *testing.T, c *testcluster.Cluster, tool string, args ...string) measured {
	t.Helper()
	cmd := exec.Command(tool, append(args, "--kubeconfig", c.Kubeconfig)...)
	cmd.Env = c.Env()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return measured{result: result{Stdout: out.String(), Stderr: errOut.String(), Code: code}, rss: ru.Maxrss * 1024}
}

// TestHostileReleaseRecords (issue 50): release records anyone who may
// write Secrets in a namespace can forge — a 1 MiB gzip bomb that
// inflates to 760 MiB, JSON that is not JSON, a revision of
// 99999999999999999999, a wrong type — are read within the documented
// bound (256 MiB decompressed) by every verb, each run as a process under
// 400 MiB of peak RSS: by name each exits 1 saying which record is
// unreadable and why (never "not found"), `log` shows the revision as
// unreadable and goes on, and `status -A` names each one and counts it as
// not in sync (--detailed-exitcode 3).
func TestHostileReleaseRecords(t *testing.T) {
	c := testcluster.Get(t)
	ns := c.Namespace(t)
	tool := buildTool(t, c)
	chart := func(version string) string {
		return writeChart(t, "app", version, map[string]string{"cm.yaml": configMap(false, version)})
	}
	c.Helm(t, "install", "app", chart("1.0.0"), "-n", ns)
	c.Helm(t, "upgrade", "app", chart("2.0.0"), "-n", ns)
	bomb := gzipBombRecord("bomb")
	forgeRecord(t, c, ns, "bomb", "1", bomb)
	forgeRecord(t, c, ns, "bomb2", "1", gzipBombRecord("bomb2"))
	forgeRecord(t, c, ns, "app", "3", bomb) // the newest revision of a real release
	forgeRecord(t, c, ns, "notjson", "1", encodedRecord(`{"name":"notjson",`))
	forgeRecord(t, c, ns, "bigrev", "1", encodedRecord(`{"name":"bigrev","version":99999999999999999999,"info":{"status":"deployed"}}`))
	forgeRecord(t, c, ns, "wrongtype", "1", encodedRecord(`{"name":"wrongtype","version":1,"info":"deployed"}`))

	const over = "decompresses to more than the limit of 256 MiB for a release record"
	for _, tc := range []struct {
		args []string
		code int
		says []string
	}{
		{[]string{"status", "bomb"}, 1, []string{"sh.helm.release.v1.bomb.v1 in namespace " + ns + " is unreadable: " + over}},
		{[]string{"status", "bomb", "bomb2"}, 1, []string{"is unreadable: " + over}},
		{[]string{"status", "app"}, 1, []string{"sh.helm.release.v1.app.v3 in namespace " + ns + " is unreadable: " + over}},
		{[]string{"status", "notjson"}, 1, []string{"is unreadable: not JSON"}},
		{[]string{"status", "bigrev"}, 1, []string{"is unreadable: wrong type: a JSON number in Release.version"}},
		{[]string{"status", "wrongtype"}, 1, []string{"is unreadable: wrong type: a JSON string in Release.info"}},
		{[]string{"rollback", "bomb", "1", "--dry-run"}, 1, []string{over}},
		{[]string{"rollback", "app", "1", "--dry-run"}, 1, []string{over}},
		{[]string{"uninstall", "bomb", "--dry-run"}, 1, []string{over}},
		{[]string{"diff", "app", "2", "3"}, 1, []string{"sh.helm.release.v1.app.v3 in namespace " + ns + " is unreadable: " + over}},
		// No recreate journal: nothing to recover, and the record it would
		// note the run in is named.
		{[]string{"recover", "bomb", "--yes"}, 0, []string{"nothing to recover", "sh.helm.release.v1.bomb.v1 in namespace " + ns + " is unreadable: " + over}},
		{[]string{"bomb", chart("2.0.0"), "--dry-run"}, 1, []string{over}},
		{[]string{"app", chart("3.0.0"), "--dry-run"}, 1, []string{over}},
		{[]string{"log", "app"}, 0, []string{"revision 3 (unreadable)", "sh.helm.release.v1.app.v3 is unreadable: " + over, "revision 2 (", "revision 1 ("}},
		{[]string{"log", "bomb", "-o", "json"}, 0, []string{`"status": "unreadable"`}},
	} {
		name := strings.Join(tc.args, " ")
		r := runMeasured(t, c, tool, append(tc.args, "-n", ns)...)
		if r.Code != tc.code {
			t.Errorf("%s: exit %d, want %d\n%s\n%s", name, r.Code, tc.code, r.Stdout, r.Stderr)
		}
		saysAll(t, name, r.Stdout+r.Stderr, tc.says...)
		if strings.Contains(r.Stderr, "not found") {
			t.Errorf("%s says not found:\n%s", name, r.Stderr)
		}
		t.Logf("%s: exit %d, peak RSS %d MiB", name, r.Code, r.rss>>20)
		if r.rss > recordRSSLimit {
			t.Errorf("%s: peak RSS %d MiB, want under %d MiB", name, r.rss>>20, recordRSSLimit>>20)
		}
		noRawControl(t, map[string]string{name + " stdout": r.Stdout, name + " stderr": r.Stderr})
	}

	all := runMeasured(t, c, tool, "status", "-A", "--detailed-exitcode", "-o", "json")
	if all.Code != 3 {
		t.Errorf("status -A --detailed-exitcode: exit %d, want 3 (unreadable records are not in sync)\n%s", all.Code, all.Stderr)
	}
	t.Logf("status -A: exit %d, peak RSS %d MiB", all.Code, all.rss>>20)
	if all.rss > recordRSSLimit {
		t.Errorf("status -A: peak RSS %d MiB, want under %d MiB", all.rss>>20, recordRSSLimit>>20)
	}
	for _, name := range []string{"bomb", "bomb2", "app", "notjson", "bigrev", "wrongtype"} {
		saysAll(t, "status -A", all.Stdout, `"name": "`+name+`"`, "the release record sh.helm.release.v1."+name+".v")
	}
	saysAll(t, "status -A", all.Stdout, `"helmStatus": "unreadable"`, over, "not JSON", "wrong type")
	for _, format := range []string{"text", "markdown", "sarif"} {
		r := runMeasured(t, c, tool, "status", "-A", "--detailed-exitcode", "-o", format)
		if r.Code != 3 {
			t.Errorf("status -A -o %s: exit %d, want 3\n%s", format, r.Code, r.Stderr)
		}
		saysAll(t, "status -A -o "+format, r.Stdout, "sh.helm.release.v1.bomb.v1 is unreadable", "sh.helm.release.v1.notjson.v1 is unreadable")
		if format == "sarif" {
			saysAll(t, "status -A -o sarif", r.Stdout, `"ruleId": "unreadable"`, `releases/`+ns+`/bomb`)
		}
		noRawControl(t, map[string]string{"status -A -o " + format: r.Stdout})
	}
}
