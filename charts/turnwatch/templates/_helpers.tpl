{{/* Chart name, shortened to fit a DNS label. */}}
{{- define "turnwatch.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name: the prefix of every namespaced resource. The release name alone when it
already contains the chart name ("turnwatch"), so `helm install turnwatch` gives
"turnwatch-manager", not "turnwatch-turnwatch-manager".
*/}}
{{- define "turnwatch.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "turnwatch.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "turnwatch.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: turnwatch
{{- end }}

{{/* Selector labels of the manager's Pods (stable across upgrades). */}}
{{- define "turnwatch.managerSelectorLabels" -}}
app.kubernetes.io/name: {{ include "turnwatch.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end }}

{{/* Name of the manager's ServiceAccount. */}}
{{- define "turnwatch.managerServiceAccount" -}}
{{- if .Values.manager.serviceAccount.create }}
{{- default (printf "%s-manager" (include "turnwatch.fullname" .)) .Values.manager.serviceAccount.name }}
{{- else }}
{{- required "manager.serviceAccount.name is required when manager.serviceAccount.create is false" .Values.manager.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Name of the ConfigMap holding the cluster config (guards and prices). */}}
{{- define "turnwatch.configName" -}}
{{- printf "%s-config" (include "turnwatch.fullname" .) }}
{{- end }}

{{/*
An image reference from a {repository, tag, digest} dict, with fallbacks:
(dict "image" .Values.sidecar.image "fallback" .Values.image "appVersion" .Chart.AppVersion).
A digest pins the image; otherwise the tag, then the chart's appVersion. The
fallback's digest is inherited only when neither repository nor tag is
overridden (a digest names one image, not a repository).
*/}}
{{- define "turnwatch.imageRef" -}}
{{- $repo := default .fallback.repository .image.repository }}
{{- $digest := .image.digest }}
{{- if not (or $digest .image.repository .image.tag) }}
{{- $digest = .fallback.digest }}
{{- end }}
{{- $tag := default (default .appVersion .fallback.tag) .image.tag }}
{{- if $digest }}
{{- printf "%s@%s" $repo $digest }}
{{- else }}
{{- printf "%s:%s" $repo $tag }}
{{- end }}
{{- end }}

{{/* The manager's image. */}}
{{- define "turnwatch.managerImage" -}}
{{- include "turnwatch.imageRef" (dict "image" .Values.image "fallback" .Values.image "appVersion" .Chart.AppVersion) }}
{{- end }}

{{/* The sidecar's image: the manager's unless sidecar.image overrides it. */}}
{{- define "turnwatch.sidecarImage" -}}
{{- include "turnwatch.imageRef" (dict "image" .Values.sidecar.image "fallback" .Values.image "appVersion" .Chart.AppVersion) }}
{{- end }}
