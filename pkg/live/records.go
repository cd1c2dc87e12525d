package live

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ReleaseRecord returns the encoded release in data "release" of Helm's
// record key in namespace ns: a Secret when secrets, else a ConfigMap (the
// two cluster storage drivers). It takes Helm's own typed client, the one
// Helm's configuration builds for its storage.
func ReleaseRecord(ctx context.Context, cs kubernetes.Interface, secrets bool, ns, key string) (string, error) {
	if secrets {
		s, err := cs.CoreV1().Secrets(ns).Get(ctx, key, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return string(s.Data["release"]), nil
	}
	c, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, key, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return c.Data["release"], nil
}

// EncodedRecord is one of Helm's release records as stored: its labels and
// its encoded release.
type EncodedRecord struct {
	Labels map[string]string
	Data   string
}

// ReleaseRecords returns Helm's release records (label owner=helm) in ns
// ("" every namespace) as its storage driver lists them (Secrets when
// secrets, else ConfigMaps), a page at a time.
func ReleaseRecords(ctx context.Context, cs kubernetes.Interface, secrets bool, ns string) ([]EncodedRecord, error) {
	opts := metav1.ListOptions{LabelSelector: "owner=helm", Limit: ListPage}
	var out []EncodedRecord
	for {
		var cont string
		if secrets {
			list, err := cs.CoreV1().Secrets(ns).List(ctx, opts)
			if err != nil {
				return nil, err
			}
			for i := range list.Items {
				out = append(out, EncodedRecord{Labels: list.Items[i].Labels, Data: string(list.Items[i].Data["release"])})
			}
			cont = list.Continue
		} else {
			list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, opts)
			if err != nil {
				return nil, err
			}
			for i := range list.Items {
				out = append(out, EncodedRecord{Labels: list.Items[i].Labels, Data: list.Items[i].Data["release"]})
			}
			cont = list.Continue
		}
		if opts.Continue = cont; cont == "" {
			return out, nil
		}
	}
}
