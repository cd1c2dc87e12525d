{{- define "staleconfig.deployment" -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .name }}
spec:
  replicas: 1
  selector:
    matchLabels: {app: {{ .name }}}
  template:
    metadata:
      labels: {app: {{ .name }}}
      {{- with .annotations }}
      annotations: {{ toYaml . | nindent 8 }}
      {{- end }}
    spec:
      containers:
      - name: app
        image: {{ .root.Values.image }}
        {{- with .container }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with .volumes }}
      volumes: {{ toYaml . | nindent 8 }}
      {{- end }}
{{- end -}}
