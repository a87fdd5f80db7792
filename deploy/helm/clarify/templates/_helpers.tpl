{{/* Names, labels and the checks every template relies on. */}}

{{- define "clarify.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "clarify.fullname" -}}
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

{{- define "clarify.selectorLabels" -}}
app.kubernetes.io/name: {{ include "clarify.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "clarify.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "clarify.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "clarify.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "clarify.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The combinations that cannot work, refused when rendering with a message naming the values.
*/}}
{{- define "clarify.validate" -}}
{{- $replicas := int .Values.replicaCount }}
{{- if and (eq .Values.store.type "sqlite") (gt $replicas 1) }}
{{- fail (printf "store.type is sqlite and replicaCount is %d: a SQLite file serves one replica. Set store.type=postgres (with existingSecret holding the database URL) for more replicas, or replicaCount=1." $replicas) }}
{{- end }}
{{- if and (eq .Values.store.type "postgres") (not .Values.existingSecret) }}
{{- fail "store.type is postgres but existingSecret is empty: create a Secret holding the database URL under the key secretKeys.databaseUrl names, and set existingSecret to its name." }}
{{- end }}
{{- if and (eq .Values.store.type "postgres") (not .Values.secretKeys.databaseUrl) }}
{{- fail "store.type is postgres but secretKeys.databaseUrl is empty: name the key of existingSecret that holds the database URL." }}
{{- end }}
{{- end }}
