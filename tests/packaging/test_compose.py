"""The compose files (deploy/compose): both match the compose specification's schema, read every
secret from a file, the page's podman-compose commands (checked with podman-compose's dry run)
give the project, volumes and stop timeout the page and the files promise with the
podman-compose this machine has, and the SQLite one, brought up with podman-compose over the image
scripts/image built, answers a request through its published port (moved by CLARIFY_PORT, and
the links it prints with it) and keeps its volume.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, Api, answer_of, free_port, need, need_tool, run
from test_pages import PAGES, shell_lines, words

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
        # CLARIFY_PORT moved the published port: the links the server prints follow it.
        logs = podman.logs(containers[0])
        assert f"the inbox is at http://127.0.0.1:{port}/" in logs, logs
        assert podman("healthcheck", "run", containers[0], check=False).returncode == 0
        volumes = podman("volume", "ls", "--format", "{{.Name}}").stdout.split()
        assert f"{name}_clarify-data" in volumes, volumes
    finally:
        compose_run("down", "--volumes", check=False)
        podman("volume", "rm", "--force", f"{name}_clarify-data", check=False)
        podman("network", "rm", "--force", f"{name}_default", check=False)


def podman_compose_lines(file: str) -> list[list[str]]:
    """compose.md's podman-compose commands for `file` (compose.yaml when no -f is given)."""
    found = []
    page = PAGES / "compose.md"
    spans = re.findall(r"`(podman-compose [^`]+)`", page.read_text())
    for line in shell_lines(page) + spans:
        # A command shown as an alternative, in a comment (`# or: ...`), counts too.
        line = re.sub(r"^\s*#\s*or:\s*", "", line)
        w = words(line)
        w = [x for x in w if not re.fullmatch(r"[A-Z_]+=.*", x)]
        if not w or w[0] != "podman-compose":
            continue
        named = w[w.index("-f") + 1] if "-f" in w else "compose.yaml"
        if named == file:
            found.append(w)
    return found


def test_the_compose_page_runs_no_command_this_podman_lacks():
    text = (PAGES / "compose.md").read_text() + "".join(p.read_text() for p in COMPOSE.glob("*.yaml"))
    if re.search(r"\bpodman compose (up|down|stop|-f|-p|\.\.\.)", text):
        need_tool("podman", "`podman compose` is checked against the installed podman")
        # `podman compose --help` prints podman's own help and exits 0 where the command is missing.
        result = subprocess.run(["podman", "compose", "version"], capture_output=True, text=True)
        assert result.returncode == 0, (
            "the compose page or files tell users to run `podman compose`, which this podman "
            f"does not have:\n{result.stderr.strip()}")


@pytest.mark.parametrize("file", ["compose.yaml", "compose.sqlite.yaml"])
def test_podman_compose_makes_the_project_the_page_and_the_file_name(file, podman, tmp_path):
    """podman-compose --dry-run with the page's command: the project (and so the volume names)
    is the file's `name:`, and the stop timeout is the file's stop_grace_period, or the page
    stops with `-t` that long."""
    tool = need_tool("podman-compose", "the compose page's podman-compose commands are run with it")
    doc = yaml.safe_load((COMPOSE / file).read_text())
    commands = podman_compose_lines(file)
    ups = [c for c in commands if "up" in c]
    assert ups, f"compose.md shows no `podman-compose ... up` for {file}"
    # The folder the user runs it in is deploy/compose, named `compose`.
    project = tmp_path / "compose"
    shutil.copytree(COMPOSE, project)
    (project / "secrets").mkdir()
    for secret in doc.get("secrets", {}).values():
        (project / secret["file"]).touch()
    env = {**os.environ, "CLARIFY_IMAGE": "localhost/clarify-test-dry:run"}
    env.pop("CLARIFY_PORT", None)
    up = ups[0]
    result = run([tool, "--dry-run", *up[1:]], cwd=project, env=env, timeout=120)
    runs = [line for line in result.stdout.splitlines() if line.startswith("podman run ")]
    names = re.findall(r"--name=(\S+)", "\n".join(runs))
    volumes = re.findall(r"'podman', 'volume', 'create', .*'([^']+)'\]", result.stdout)
    try:
        assert names, result.stdout
        expected = doc["name"]
        for name in names + volumes:
            assert name.startswith(expected + "_"), (
                f"`{' '.join(up)}` makes {name}: podman-compose {version(tool)} does not take the "
                f"project from the file's `name: {expected}`, so the page's command must pass -p {expected}")
        for volume in doc.get("volumes", {}):
            assert f"`{expected}_{volume}`" in (PAGES / "compose.md").read_text(), \
                f"compose.md should name the volume {expected}_{volume}"

        grace = {s: spec.get("stop_grace_period") for s, spec in doc["services"].items()
                 if "stop_grace_period" in spec}
        for service, period in grace.items():
            seconds = int(str(period).rstrip("s"))
            line = next(r for r in runs if f"--name={expected}_{service}_1 " in r + " ")
            if f"--stop-timeout {seconds}" in line or f"--stop-timeout={seconds}" in line:
                continue
            stops = [c for c in commands if "stop" in c]
            assert any(c[c.index("-t") + 1] == str(seconds) for c in stops if "-t" in c), (
                f"podman-compose {version(tool)} ignores {service}'s stop_grace_period ({period}): "
                f"compose.md should stop it with `podman-compose ... stop -t {seconds}`")
    finally:
        for name in volumes:
            podman("volume", "rm", "--force", name, check=False)
        for network in set(re.findall(r"'podman', 'network', 'create', .*'([^']+)'\]", result.stdout)):
            podman("network", "rm", "--force", network, check=False)


def version(tool: str) -> str:
    result = subprocess.run([tool, "version"], capture_output=True, text=True)
    # 1.0 says `podman-composer version  1.0.3`, later ones `podman-compose version 1.3.0`.
    found = re.search(r"podman-composer? version:?\s+(\d+\.\d+\S*)", result.stdout + result.stderr)
    return found.group(1) if found else "(unknown version)"


def test_the_compose_page_names_the_podman_compose_version_and_what_it_ignores():
    tool = need_tool("podman-compose", "the page is checked against the podman-compose installed")
    installed = version(tool)
    major_minor = ".".join(installed.split(".")[:2])
    page = (PAGES / "compose.md").read_text()
    assert f"podman-compose {major_minor}" in page or f"{installed} is" in page, \
        f"compose.md should say what podman-compose {installed} (installed here) does with the files"
    uses_conditions = any(
        isinstance(spec.get("depends_on"), dict)
        and any(d.get("condition") == "service_healthy" for d in spec["depends_on"].values())
        for spec in yaml.safe_load((COMPOSE / "compose.yaml").read_text())["services"].values())
    # podman-compose waits for `service_healthy` only from 1.3.
    if uses_conditions and tuple(int(x) for x in installed.split(".")[:2]) < (1, 3):
        assert re.search(r"ignores `depends_on`'s `condition: service_healthy`", page), \
            f"podman-compose {installed} starts the replicas without waiting for PostgreSQL; compose.md should say so"
