package gitops

import (
	"bytes"
	"encoding/json"
	"fmt"

	"helm.sh/helm/v3/pkg/postrender"
	"sigs.k8s.io/kustomize/api/builtins"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// PostRenderer is one of helm-controller's post-renderers: a kustomize
// post-renderer (Kustomize), or the origin labels it puts on every object
// (Labels).
type PostRenderer struct {
	Kustomize *kustypes.Kustomization `json:"kustomize,omitempty"`
	Labels    map[string]string       `json:"labels,omitempty"`
}

// fluxPatch is helm-controller's JSON 6902 patch: a target and operations.
type fluxPatch struct {
	Target *kustypes.Selector `json:"target"`
	Patch  []interface{}      `json:"patch"`
}

// fluxKustomize is spec.postRenderers[].kustomize.
type fluxKustomize struct {
	Patches               []kustypes.Patch  `json:"patches,omitempty"`
	PatchesStrategicMerge []json.RawMessage `json:"patchesStrategicMerge,omitempty"`
	PatchesJSON6902       []fluxPatch       `json:"patchesJson6902,omitempty"`
	Images                []kustypes.Image  `json:"images,omitempty"`
}

// postRenderers reads spec.postRenderers, and adds the origin labels
// helm-controller puts last (helm.toolkit.fluxcd.io/name and /namespace,
// its BuildPostRenderers).
func postRenderers(d *Doc, spec map[string]interface{}) ([]PostRenderer, error) {
	items, err := list(d, spec, "spec", "postRenderers")
	if err != nil {
		return nil, err
	}
	var out []PostRenderer
	for i, item := range items {
		m, _ := item.(map[string]interface{})
		k, ok := m["kustomize"]
		if !ok {
			continue
		}
		data, err := json.Marshal(k)
		if err != nil {
			return nil, fieldError(d, "spec.postRenderers", "item %d: %v", i, err)
		}
		var fk fluxKustomize
		if err := json.Unmarshal(data, &fk); err != nil {
			return nil, fieldError(d, "spec.postRenderers", "item %d: kustomize: %v", i, err)
		}
		kz := &kustypes.Kustomization{Patches: fk.Patches, Images: fk.Images}
		for _, p := range fk.PatchesStrategicMerge {
			kz.Patches = append(kz.Patches, kustypes.Patch{Patch: string(p)})
		}
		for _, p := range fk.PatchesJSON6902 {
			ops, err := json.Marshal(p.Patch)
			if err != nil {
				return nil, fieldError(d, "spec.postRenderers", "item %d: patchesJson6902: %v", i, err)
			}
			kz.Patches = append(kz.Patches, kustypes.Patch{Target: p.Target, Patch: string(ops)})
		}
		out = append(out, PostRenderer{Kustomize: kz})
	}
	out = append(out, PostRenderer{Labels: map[string]string{
		"helm.toolkit.fluxcd.io/name":      d.Ref.Name,
		"helm.toolkit.fluxcd.io/namespace": d.Ref.Namespace,
	}})
	return out, nil
}

// Renderer is the Helm post-renderer that runs rs in order, in process,
// with the kustomize library helm-controller uses; nil when rs is empty.
func Renderer(rs []PostRenderer) postrender.PostRenderer {
	if len(rs) == 0 {
		return nil
	}
	return chain(rs)
}

type chain []PostRenderer

// Run applies each post-renderer to the manifests in turn. krusty is not
// safe for concurrent use (kubernetes-sigs/kustomize#3659, which
// helm-controller serialises); the releases of a GitOps plan are rendered
// one at a time.
func (c chain) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	out := in
	for i, r := range c {
		var err error
		if r.Kustomize != nil {
			out, err = runKustomize(*r.Kustomize, out)
		} else {
			out, err = addLabels(r.Labels, out)
		}
		if err != nil {
			return nil, fmt.Errorf("post-renderer %d: %w", i+1, err)
		}
	}
	return out, nil
}

// runKustomize builds k over the manifests in an in-memory file system,
// as helm-controller's Kustomize post-renderer does (no plugins, no load
// restrictions).
func runKustomize(k kustypes.Kustomization, in *bytes.Buffer) (*bytes.Buffer, error) {
	fs := filesys.MakeFsInMemory()
	const input = "helm-output.yaml"
	k.APIVersion, k.Kind = kustypes.KustomizationVersion, kustypes.KustomizationKind
	k.Resources = append([]string{input}, k.Resources...)
	if err := fs.WriteFile(input, in.Bytes()); err != nil {
		return nil, err
	}
	data, err := json.Marshal(k)
	if err != nil {
		return nil, err
	}
	if err := fs.WriteFile("kustomization.yaml", data); err != nil {
		return nil, err
	}
	kz := krusty.MakeKustomizer(&krusty.Options{LoadRestrictions: kustypes.LoadRestrictionsNone, PluginConfig: kustypes.DisabledPluginConfig()})
	res, err := kz.Run(fs, ".")
	if err != nil {
		return nil, err
	}
	out, err := res.AsYaml()
	return bytes.NewBuffer(out), err
}

// addLabels puts labels on every object's metadata, as helm-controller's
// origin labels do.
func addLabels(labels map[string]string, in *bytes.Buffer) (*bytes.Buffer, error) {
	factory := resmap.NewFactory(provider.NewDefaultDepProvider().GetResourceFactory())
	res, err := factory.NewResMapFromBytes(in.Bytes())
	if err != nil {
		return nil, err
	}
	t := builtins.LabelTransformerPlugin{Labels: labels, FieldSpecs: []kustypes.FieldSpec{{Path: "metadata/labels", CreateIfNotPresent: true}}}
	if err := t.Transform(res); err != nil {
		return nil, err
	}
	out, err := res.AsYaml()
	return bytes.NewBuffer(out), err
}
