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
