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

{{/*
CLARIFY_MAX_WAITERS: maxWaiters, or derived from resources.limits.memory (128 MiB kept for the
server, 24 KiB a waiting long-poll) so that a full replica answers 503 before its memory limit
kills it; empty without either (the server's own default). A limit in a form this cannot read
fails the render, naming maxWaiters.
*/}}
{{- define "clarify.maxWaiters" -}}
{{- if .Values.maxWaiters }}
{{- int64 .Values.maxWaiters }}
{{- else }}
{{- $raw := dig "limits" "memory" "" (.Values.resources | default dict) }}
{{- $limit := kindIs "float64" $raw | ternary (printf "%d" (int64 $raw)) (toString $raw) }}
{{- if $limit }}
{{- $pattern := "^([0-9]+)(Ki|Mi|Gi|Ti|k|M|G|T)?$" }}
{{- if not (regexMatch $pattern $limit) }}
{{- fail (printf "resources.limits.memory is %q, which the chart cannot turn into a waiter limit: write it as a whole number with Ki, Mi, Gi, Ti, k, M, G or T, or set maxWaiters." $limit) }}
{{- end }}
{{- $units := dict "" 1 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 }}
{{- $bytes := mul (int64 (regexReplaceAll $pattern $limit "${1}")) (get $units (regexReplaceAll $pattern $limit "${2}")) }}
{{- $reserve := 134217728 }}
{{- if le (int64 $bytes) $reserve }}
{{- fail (printf "resources.limits.memory is %s: clarify needs more than 128Mi to hold waiting agents; raise it, or set maxWaiters." $limit) }}
{{- end }}
{{- div (sub $bytes $reserve) 24576 }}
{{- end }}
{{- end }}
{{- end }}
