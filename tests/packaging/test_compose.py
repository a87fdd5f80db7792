"""The compose files (deploy/compose): both match the compose specification's schema, read every
secret from a file, and the SQLite one, brought up with podman-compose over the image
scripts/image built, answers a request through its published port and keeps its volume.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import yaml

from conftest import ROOT, Api, answer_of, free_port, need, need_tool, run

COMPOSE = ROOT / "deploy" / "compose"


def check_compose(*files: Path) -> subprocess.CompletedProcess:
    tool = shutil.which("check-jsonschema")
    need(tool is not None, "check-jsonschema (PyPI) is not installed")
    return subprocess.run([tool, "--builtin-schema", "vendor.compose-spec", *map(str, files)],
                          capture_output=True, text=True)


def test_compose_files_match_the_compose_specification():
    result = check_compose(COMPOSE / "compose.yaml", COMPOSE / "compose.sqlite.yaml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_schema_check_catches_a_wrong_key(tmp_path):
    doc = yaml.safe_load((COMPOSE / "compose.sqlite.yaml").read_text())
    doc["services"]["clarify"]["replica"] = 2
    wrong = tmp_path / "compose.yaml"
    wrong.write_text(yaml.safe_dump(doc))
    assert check_compose(wrong).returncode != 0


def test_compose_reads_every_secret_from_a_file():
    doc = yaml.safe_load((COMPOSE / "compose.yaml").read_text())
    services = doc["services"]
    assert set(services) == {"postgres", "clarify-1", "clarify-2"}
    for name in ("clarify-1", "clarify-2"):
        service = services[name]
        env = service["environment"]
        assert env["CLARIFY_DB_FILE"] == "/run/secrets/database-url"
        assert env["CLARIFY_ADMIN_KEY_FILE"] == "/run/secrets/admin-key"
        assert "CLARIFY_DB" not in env
        assert service["read_only"] is True
        # The image's own HEALTHCHECK (exec form, no shell) is left to apply.
        assert "healthcheck" not in service
        assert service["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD_FILE"].startswith("/run/secrets/")
    assert "postgres-data" in doc["volumes"]
    for secret in doc["secrets"].values():
        assert secret["file"].startswith("./secrets/")


def test_sqlite_compose_comes_up_and_answers(podman, image, admin_key, tmp_path):
    compose = need_tool("podman-compose", "the compose file is brought up with Debian's podman-compose")
    project = tmp_path / "compose"
    shutil.copytree(COMPOSE, project)
    (project / "secrets").mkdir(mode=0o700)
    (project / "secrets" / "admin-key").write_text(admin_key + "\n")
    (project / "secrets" / "admin-key").chmod(0o644)
    port = free_port()
    name = f"clarify-test-{port}"
    env = {**os.environ, "CLARIFY_IMAGE": image, "CLARIFY_PORT": str(port)}

    def compose_run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run([compose, "-p", name, "-f", "compose.sqlite.yaml", *args], cwd=project, env=env,
                   check=check, timeout=300)

    try:
        compose_run("up", "-d")
        api = Api(f"http://127.0.0.1:{port}", admin_key)
        api.wait_ready(within=60, describe=lambda: compose_run("logs", check=False).stdout)
        request_id = api.ask("Up through compose?", ["yes", "no"])
        api.answer(request_id, "yes")
        assert answer_of(api.call("GET", f"/v1/requests/{request_id}")[1]) == "yes"
        containers = podman("ps", "--quiet", "--filter", f"label=io.podman.compose.project={name}").stdout.split()
        assert len(containers) == 1, containers
        assert podman("healthcheck", "run", containers[0], check=False).returncode == 0
        volumes = podman("volume", "ls", "--format", "{{.Name}}").stdout.split()
        assert f"{name}_clarify-data" in volumes, volumes
    finally:
        compose_run("down", "--volumes", check=False)
        podman("volume", "rm", "--force", f"{name}_clarify-data", check=False)
        podman("network", "rm", "--force", f"{name}_default", check=False)
