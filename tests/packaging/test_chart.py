"""The Helm chart (deploy/helm/clarify), rendered and linted offline with Helm v4's own library
(helm-python-sdk) across a matrix of values, every rendered resource validated with
`kubernetes-validate --strict` for the oldest and a recent Kubernetes minor version the chart
supports, and the properties that matter asserted: non-root and read-only, the probes, secrets
only from an existing Secret, a PodDisruptionBudget only with two replicas or more, a volume for
SQLite, and SQLite with two replicas refused at render time with a message saying why.
"""

from __future__ import annotations

import copy
import re
import subprocess
from pathlib import Path

import pytest
import yaml

helm_python = pytest.importorskip("helm_python")

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "clarify"
KUBERNETES_VERSIONS = ["1.30.0", "1.34.0"]

POSTGRES = {"store": {"type": "postgres"}, "existingSecret": "clarify-secrets"}

MATRIX = {
    "defaults": {},
    "sqlite-no-persistence": {"store": {"type": "sqlite", "sqlite": {"persistence": {"enabled": False}}}},
    "sqlite-existing-claim-and-admin-key": {
        "existingSecret": "clarify-secrets",
        "store": {"type": "sqlite", "sqlite": {"persistence": {"existingClaim": "my-data"}}},
    },
    "postgres-3-replicas": {**POSTGRES, "replicaCount": 3},
    "postgres-1-replica": {**POSTGRES, "replicaCount": 1},
    "ingress-on": {
        **POSTGRES,
        "replicaCount": 2,
        "publicUrl": "https://clarify.example.com",
        "ingress": {
            "enabled": True,
            "className": "nginx",
            "annotations": {"nginx.ingress.kubernetes.io/proxy-read-timeout": "75"},
            "hosts": [{"host": "clarify.example.com", "paths": [{"path": "/", "pathType": "Prefix"}]}],
            "tls": [{"secretName": "clarify-tls", "hosts": ["clarify.example.com"]}],
        },
    },
    "existing-secrets-and-config": {
        **POSTGRES,
        "replicaCount": 2,
        "secretKeys": {"databaseUrl": "db", "adminKey": "admin"},
        "config": '[server]\nmax_options = 6\n\n[[channels]]\nname = "ops"\ntype = "slack"\n'
                  'bot_token_file = "/run/secrets/clarify/slack-bot-token"\n',
        "extraEnv": [{"name": "CLARIFY_RATE_LIMIT", "value": "50"}],
    },
    "service-monitor-no-prestop": {"serviceMonitor": {"enabled": True}, "preStopSleepSeconds": 0},
}


def render(values: dict) -> dict[str, list[dict]]:
    """The chart's resources by kind, as parsed YAML."""
    chart = helm_python.Chart.load(str(CHART))
    try:
        rendered = chart.render(values=copy.deepcopy(values), name="demo", namespace="apps")
    finally:
        chart.close()
    by_kind: dict[str, list[dict]] = {}
    for path, text in rendered.items():
        if not path.endswith(".yaml"):
            continue
        for doc in yaml.safe_load_all(text):
            if doc:
                by_kind.setdefault(doc["kind"], []).append(doc)
    return by_kind


def only(resources: dict[str, list[dict]], kind: str) -> dict:
    found = resources.get(kind, [])
    assert len(found) == 1, f"expected one {kind}, rendered {len(found)}"
    return found[0]


def container(resources) -> dict:
    spec = only(resources, "Deployment")["spec"]["template"]["spec"]
    assert len(spec["containers"]) == 1
    return spec["containers"][0]


def env_of(resources) -> dict[str, dict]:
    return {e["name"]: e for e in container(resources).get("env", [])}


@pytest.mark.parametrize("case", MATRIX)
def test_lints_clean_and_validates_for_two_kubernetes_versions(case, tmp_path):
    values = MATRIX[case]
    report = helm_python.lint(str(CHART), values=copy.deepcopy(values), strict=True)
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert not report["errors"] and not problems, report

    resources = render(values)
    manifest = tmp_path / "rendered.yaml"
    manifest.write_text(yaml.safe_dump_all([d for docs in resources.values() for d in docs]))
    for version in KUBERNETES_VERSIONS:
        result = subprocess.run(
            ["kubernetes-validate", "--strict", "--quiet", "-k", version, str(manifest)],
            capture_output=True, text=True,
        )
        assert result.returncode == 0, f"Kubernetes {version}:\n{result.stdout}{result.stderr}"


@pytest.mark.parametrize("case", MATRIX)
def test_runs_non_root_read_only_with_probes(case):
    resources = render(MATRIX[case])
    pod = only(resources, "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == 10001
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert pod["automountServiceAccountToken"] is False
    c = container(resources)
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert c["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["ports"] == [{"name": "http", "containerPort": 7420, "protocol": "TCP"}]
    assert env_of(resources)["CLARIFY_LISTEN"]["value"] == "0.0.0.0:7420"
    assert "memory" in c["resources"]["limits"]
    # Long-polls end at once on SIGTERM; the grace period covers in-flight requests and the
    # preStop sleep, which must fit inside it.
    grace = pod["terminationGracePeriodSeconds"]
    sleep = c.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
    assert 10 <= grace <= 120 and sleep < grace
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    assert "/data" in mounts, "the store's directory must be writable on a read-only root"


@pytest.mark.parametrize("case", MATRIX)
def test_no_secret_in_plain_values(case):
    resources = render(MATRIX[case])
    assert "Secret" not in resources, "the chart must not make Secrets out of values"
    for name, entry in env_of(resources).items():
        value = str(entry.get("value", ""))
        assert not value.startswith("postgres"), f"{name} holds a database URL in plain text"
        assert not re.search(r"://[^/@]*:[^/@]*@", value), f"{name} holds a password in plain text"
    # Every secret the pod reads is a file of the existing Secret.
    for entry in env_of(resources).values():
        if entry["name"].endswith("_FILE"):
            assert entry["value"].startswith("/run/secrets/clarify/")


def test_postgres_reads_the_database_url_and_admin_key_from_the_existing_secret():
    resources = render(MATRIX["existing-secrets-and-config"])
    env = env_of(resources)
    assert "CLARIFY_DB" not in env
    assert env["CLARIFY_DB_FILE"]["value"] == "/run/secrets/clarify/db"
    assert env["CLARIFY_ADMIN_KEY_FILE"]["value"] == "/run/secrets/clarify/admin"
    assert env["CLARIFY_CONFIG"]["value"] == "/etc/clarify/clarify.toml"
    assert env["CLARIFY_RATE_LIMIT"]["value"] == "50"
    pod = only(resources, "Deployment")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["secrets"]["secret"]["secretName"] == "clarify-secrets"
    assert volumes["config"]["configMap"]["name"] == "demo-clarify"
    assert "bot_token_file" in only(resources, "ConfigMap")["data"]["clarify.toml"]
    assert "PersistentVolumeClaim" not in resources
    assert "emptyDir" in volumes["data"]
    assert only(resources, "Deployment")["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_a_changed_configuration_rolls_the_pods():
    def checksum(config):
        d = only(render({"config": config}), "Deployment")
        return d["spec"]["template"]["metadata"]["annotations"]["checksum/config"]

    assert checksum("[server]\nmax_options = 5\n") != checksum("[server]\nmax_options = 6\n")


@pytest.mark.parametrize("replicas, expect_pdb", [(1, False), (2, True), (3, True)])
def test_disruption_budget_only_with_two_replicas_or_more(replicas, expect_pdb):
    resources = render({**POSTGRES, "replicaCount": replicas})
    assert ("PodDisruptionBudget" in resources) == expect_pdb
    assert only(resources, "Deployment")["spec"]["replicas"] == replicas
    if expect_pdb:
        pdb = only(resources, "PodDisruptionBudget")
        assert pdb["spec"]["maxUnavailable"] == 1
        labels = only(resources, "Deployment")["spec"]["template"]["metadata"]["labels"]
        assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()


def test_sqlite_keeps_its_file_on_a_claim_and_stops_before_starting_anew():
    resources = render({})
    pvc = only(resources, "PersistentVolumeClaim")
    assert pvc["spec"]["resources"]["requests"]["storage"] == "1Gi"
    assert pvc["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    deployment = only(resources, "Deployment")
    assert deployment["spec"]["strategy"]["type"] == "Recreate"
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes["data"]["persistentVolumeClaim"]["claimName"] == pvc["metadata"]["name"]
    assert env_of(resources)["CLARIFY_DB"]["value"] == "sqlite:///data/clarify.db"
    assert "CLARIFY_ADMIN_KEY_FILE" not in env_of(resources), "no Secret given, so no key file"


@pytest.mark.parametrize("replicas", [2, 5])
def test_sqlite_with_several_replicas_fails_to_render_naming_both(replicas):
    with pytest.raises(helm_python.HelmError) as failure:
        render({"replicaCount": replicas})
    message = str(failure.value)
    assert "store.type is sqlite" in message and f"replicaCount is {replicas}" in message, message


def test_postgres_without_a_secret_fails_to_render_saying_what_to_set():
    with pytest.raises(helm_python.HelmError) as failure:
        render({"store": {"type": "postgres"}, "replicaCount": 2})
    assert "existingSecret" in str(failure.value)


@pytest.mark.parametrize("values", [
    {"databaseUrl": "postgres://clarify:hunter2@db/clarify"},
    {"store": {"type": "postgres", "url": "postgres://clarify:hunter2@db/clarify"}},
    {"replicaCount": "two"},
    {"store": {"type": "mysql"}},
])
def test_the_values_schema_refuses_what_the_chart_does_not_take(values):
    with pytest.raises(helm_python.HelmError) as failure:
        render(values)
    assert "schema" in str(failure.value)


def test_ingress_routes_to_the_service():
    resources = render(MATRIX["ingress-on"])
    ingress = only(resources, "Ingress")
    service = only(resources, "Service")
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": service["metadata"]["name"], "port": {"name": "http"}}
    assert ingress["spec"]["tls"][0]["secretName"] == "clarify-tls"
    assert env_of(resources)["CLARIFY_PUBLIC_URL"]["value"] == "https://clarify.example.com"
    assert "Ingress" not in render({})


def test_service_monitor_scrapes_metrics_of_the_service():
    resources = render(MATRIX["service-monitor-no-prestop"])
    monitor = only(resources, "ServiceMonitor")
    service = only(resources, "Service")
    assert monitor["spec"]["endpoints"] == [{"port": "http", "path": "/metrics", "interval": "30s"}]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert "lifecycle" not in container(resources)
    assert "ServiceMonitor" not in render({})


def test_kubernetes_validate_catches_a_wrong_field(tmp_path):
    """The schema check is strict: a field Kubernetes does not know fails it."""
    resources = render({})
    deployment = only(resources, "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["readOnlyRootFileSystem"] = True
    manifest = tmp_path / "wrong.yaml"
    manifest.write_text(yaml.safe_dump(deployment))
    result = subprocess.run(["kubernetes-validate", "--strict", "--quiet", "-k", KUBERNETES_VERSIONS[0],
                             str(manifest)], capture_output=True, text=True)
    assert result.returncode != 0


def test_the_handbooks_postgres_values_install_as_written(tmp_path):
    """The values the Kubernetes page tells a new user to write render, lint and validate."""
    page = (ROOT / "docs" / "src" / "deploying" / "kubernetes.md").read_text()
    found = re.search(r"cat > values\.yaml <<'VALUES'\n(.*?)\nVALUES\n", page, re.S)
    assert found, "docs/src/deploying/kubernetes.md should show the values.yaml it installs with"
    values = yaml.safe_load(found.group(1))
    report = helm_python.lint(str(CHART), values=copy.deepcopy(values), strict=True)
    assert not report["errors"], report
    resources = render(values)
    assert only(resources, "Deployment")["spec"]["replicas"] == 2
    assert env_of(resources)["CLARIFY_DB_FILE"]["value"] == "/run/secrets/clarify/database-url"
    assert "PodDisruptionBudget" in resources and "Ingress" in resources
    manifest = tmp_path / "rendered.yaml"
    manifest.write_text(yaml.safe_dump_all([d for docs in resources.values() for d in docs]))
    for version in KUBERNETES_VERSIONS:
        result = subprocess.run(["kubernetes-validate", "--strict", "--quiet", "-k", version, str(manifest)],
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr


def max_waiters(values: dict) -> str | None:
    container = only(render(values), "Deployment")["spec"]["template"]["spec"]["containers"][0]
    return next((e["value"] for e in container["env"] if e["name"] == "CLARIFY_MAX_WAITERS"), None)


@pytest.mark.parametrize("limit, expected", [("512Mi", 16384), ("1Gi", 38229), ("2G", 75918), ("256Mi", 5461)])
def test_the_waiter_limit_follows_the_memory_limit(limit, expected):
    """A full replica answers 503 too_many_waiters before its memory limit kills it: at 24 KiB a
    waiting long-poll (BENCHMARKS.md's longpoll-memory) the waiters fit under the limit with
    room for the idle server."""
    values = {"resources": {"requests": {"memory": "64Mi"}, "limits": {"memory": limit}}}
    waiters = max_waiters(values)
    assert waiters == str(expected), waiters
    units = {"Mi": 2**20, "Gi": 2**30, "G": 10**9}
    number, unit = re.fullmatch(r"(\d+)(\D+)", limit).groups()
    assert int(waiters) * 24 * 1024 + 64 * 2**20 < int(number) * units[unit]


def test_the_chart_sets_a_waiter_limit_by_default_and_takes_one_given():
    assert max_waiters({}) == "16384", "the default 512Mi limit needs a waiter limit under it"
    assert max_waiters({"maxWaiters": 500}) == "500"
    assert max_waiters({"resources": {"limits": None}}) is None, \
        "without a memory limit the server's own default stands"
    with pytest.raises(Exception, match="maxWaiters"):
        render({"resources": {"limits": {"memory": "100Mi"}}})
    with pytest.raises(Exception, match="maxWaiters"):
        render({"resources": {"limits": {"memory": "0.5Gi"}}})
    costs = (ROOT / "docs" / "src" / "deploying" / "costs.md").read_text()
    kubernetes = (ROOT / "docs" / "src" / "deploying" / "kubernetes.md").read_text()
    for page in (costs, kubernetes):
        assert "16,384" in page and "maxWaiters" in page, "the pages state the chart's waiter limit"
