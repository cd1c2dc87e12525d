{{/* Labels shared by every object. Kept free of the chart version so an upgrade changes only what the chart really changed. */}}
{{- define "demo.labels" -}}
app.kubernetes.io/name: demo
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels of one component: immutable on workloads, so they never change between versions. */}}
{{- define "demo.selectorLabels" -}}
app.kubernetes.io/name: demo
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}
