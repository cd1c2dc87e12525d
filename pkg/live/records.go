package live

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ReleaseRecord returns Helm's record key in namespace ns, its encoded
// release in data "release": a Secret when secrets, else a ConfigMap (the
// two cluster storage drivers). It takes Helm's own typed client, the one
// Helm's configuration builds for its storage.
func ReleaseRecord(ctx context.Context, cs kubernetes.Interface, secrets bool, ns, key string) (EncodedRecord, error) {
	if secrets {
		s, err := cs.CoreV1().Secrets(ns).Get(ctx, key, metav1.GetOptions{})
		if err != nil {
			return EncodedRecord{}, err
		}
		return EncodedRecord{Name: s.Name, Namespace: s.Namespace, Labels: s.Labels, Data: s.Data["release"]}, nil
	}
	c, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, key, metav1.GetOptions{})
	if err != nil {
		return EncodedRecord{}, err
	}
	return EncodedRecord{Name: c.Name, Namespace: c.Namespace, Labels: c.Labels, Data: []byte(c.Data["release"])}, nil
}

// EncodedRecord is one of Helm's release records as stored: its name,
// namespace and labels, and its encoded release (still encoded: only
// releasestate decodes a record).
type EncodedRecord struct {
	Name, Namespace string
	Labels          map[string]string
	Data            []byte
}

// ReleaseRecords returns Helm's release records (label owner=helm) in ns
// ("" every namespace) as its storage driver lists them (Secrets when
// secrets, else ConfigMaps), a page at a time.
func ReleaseRecords(ctx context.Context, cs kubernetes.Interface, secrets bool, ns string) ([]EncodedRecord, error) {
	return ReleaseRecordsMatching(ctx, cs, secrets, ns, "owner=helm")
}

// ReleaseRecordsMatching is ReleaseRecords of the records selector
// matches (Helm's Query).
func ReleaseRecordsMatching(ctx context.Context, cs kubernetes.Interface, secrets bool, ns, selector string) ([]EncodedRecord, error) {
	opts := metav1.ListOptions{LabelSelector: selector, Limit: ListPage}
	var out []EncodedRecord
	for {
		var cont string
		if secrets {
			list, err := cs.CoreV1().Secrets(ns).List(ctx, opts)
			if err != nil {
				return nil, err
			}
			for i := range list.Items {
				s := &list.Items[i]
				out = append(out, EncodedRecord{Name: s.Name, Namespace: s.Namespace, Labels: s.Labels, Data: s.Data["release"]})
			}
			cont = list.Continue
		} else {
			list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, opts)
			if err != nil {
				return nil, err
			}
			for i := range list.Items {
				c := &list.Items[i]
				out = append(out, EncodedRecord{Name: c.Name, Namespace: c.Namespace, Labels: c.Labels, Data: []byte(c.Data["release"])})
			}
			cont = list.Continue
		}
		if opts.Continue = cont; cont == "" {
			return out, nil
		}
	}
}
