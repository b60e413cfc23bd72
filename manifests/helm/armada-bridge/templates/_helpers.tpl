{{/* The namespace of every namespaced object: the release's. */}}
{{- define "armada-bridge.namespace" -}}
{{ .Release.Namespace }}
{{- end -}}

{{/* True (non-empty) when the release namespace is not the one the components default to. */}}
{{- define "armada-bridge.otherNamespace" -}}
{{- if ne .Release.Namespace "armada-bridge-system" }}true{{ end -}}
{{- end -}}

{{/* image and imagePullPolicy of a bridge container. */}}
{{- define "armada-bridge.image" -}}
image: {{ printf "%s:%s" .Values.image.repository .Values.image.tag | quote }}
{{- with .Values.image.pullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- end -}}

{{/* The extender Service's DNS names (its serving certificate). */}}
{{- define "armada-bridge.extenderDNSNames" -}}
- armada-bridge-extender.{{ .Release.Namespace }}.svc
- armada-bridge-extender.{{ .Release.Namespace }}.svc.cluster.local
{{- end -}}

{{/* Where the bridge's own pods may run: the values' nodeSelector and tolerations. */}}
{{- define "armada-bridge.placement" -}}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
