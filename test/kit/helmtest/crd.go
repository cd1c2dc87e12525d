package helmtest

import "fmt"

// GadgetCRD is a namespaced CRD gadgets.GROUP served as v1 (storage) and,
// unless dropAlpha, v1alpha1 too: the chart's crds/ file of the CRD tests,
// before and after a served version is dropped.
func GadgetCRD(group string, dropAlpha bool) string {
	alpha := `
  - name: v1alpha1
    served: true
    storage: false
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer}}}}}}`
	if dropAlpha {
		alpha = ""
	}
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.%s}
spec:
  group: %s
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:%s
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, properties: {spec: {type: object, properties: {size: {type: integer}}}}}}
`, group, group, alpha)
}
