"""The image scripts/image builds, run with podman: what it declares (user, workdir, listen
address, labels, stop signal, health check), a server that becomes ready and answers a request
through the container as uid 10001, a read-only root filesystem with a writable /data that keeps
the store across a restart, `clarify healthcheck` saying 0 while the server is up and non-zero
once it has stopped, and a first start's login link that opens from the host; and the image
sizes the handbook quotes add up to its base and binary as podman compresses them.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import time
import urllib.error
import urllib.request
from pathlib import Path

from conftest import ROOT, Api, answer_of, free_port, run


def inspect(podman, image: str) -> dict:
    return json.loads(podman("image", "inspect", image).stdout)[0]


def test_image_declares_how_it_runs(podman, image, clarify_bin):
    info = inspect(podman, image)
    config = info["Config"]
    assert config["User"] == "10001:10001"
    assert config["WorkingDir"] == "/data"
    assert "CLARIFY_LISTEN=0.0.0.0:7420" in config["Env"]
    assert config["StopSignal"] == "SIGTERM"
    assert config["Entrypoint"] == ["clarify"] and config["Cmd"] == ["serve"]
    assert "/data" in config.get("Volumes", {})
    assert info["Healthcheck"]["Test"] == ["CMD", "clarify", "healthcheck", "--ready"]
    labels = config["Labels"]
    version = run([str(clarify_bin), "--version"]).stdout.split()[1]
    assert labels["org.opencontainers.image.version"] == version
    assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"
    assert labels["org.opencontainers.image.source"] == "https://github.com/clarify-hitl/clarify"
    assert len(labels["org.opencontainers.image.revision"]) == 40


def key_secret(tmp_path: Path, admin_key: str) -> list[str]:
    """The admin key as a file mounted the way compose and Kubernetes mount secrets."""
    path = tmp_path / "admin-key"
    path.write_text(admin_key + "\n")
    path.chmod(0o644)
    return ["-v", f"{path}:/run/secrets/admin-key:ro"]


def test_serves_as_non_root_and_answers_through_the_container(podman, image, admin_key, tmp_path):
    port = free_port()
    name = podman.start(
        image,
        env={"CLARIFY_LISTEN": f"127.0.0.1:{port}", "CLARIFY_ADMIN_KEY_FILE": "/run/secrets/admin-key"},
        options=key_secret(tmp_path, admin_key),
    )
    api = Api(f"http://127.0.0.1:{port}", admin_key)
    api.wait_ready(describe=lambda: podman.logs(name))

    assert podman("exec", name, "id", "-u").stdout.strip() == "10001"
    assert podman("exec", name, "id", "-g").stdout.strip() == "10001"
    # The SQLite file is the default one, in the working directory, /data.
    assert "clarify.db" in podman("exec", name, "ls", "/data").stdout

    request_id = api.ask("Ship the image?", ["yes", "no"])
    api.answer(request_id, "yes")
    status, record = api.call("GET", f"/v1/requests/{request_id}")
    assert status == 200 and answer_of(record) == "yes"

    # The image's own HEALTHCHECK, then the subcommand against the server's address.
    assert podman("healthcheck", "run", name, check=False).returncode == 0
    assert podman("exec", name, "clarify", "healthcheck").returncode == 0
    assert podman("exec", name, "clarify", "healthcheck", "--ready").returncode == 0

    podman("stop", "--time", "20", name)
    state = json.loads(podman("inspect", name).stdout)[0]["State"]
    assert state["ExitCode"] == 0, f"SIGTERM should end the server cleanly:\n{podman.logs(name)}"
    # Nothing listens any more: a health check from another container says so.
    down = podman("run", "--rm", "--network", "host", image, "healthcheck", "--url",
                  f"http://127.0.0.1:{port}", check=False)
    assert down.returncode != 0
    assert down.stderr.strip(), "the health check says why on stderr"


def test_read_only_root_with_a_writable_data_volume(podman, image, admin_key, tmp_path):
    port = free_port()
    volume = f"clarify-test-data-{port}"
    options = ["--read-only", "-v", f"{volume}:/data", *key_secret(tmp_path, admin_key)]
    env = {"CLARIFY_LISTEN": f"127.0.0.1:{port}", "CLARIFY_ADMIN_KEY_FILE": "/run/secrets/admin-key"}
    try:
        first = podman.start(image, env=env, options=options)
        api = Api(f"http://127.0.0.1:{port}", admin_key)
        api.wait_ready(describe=lambda: podman.logs(first))
        assert podman("exec", first, "touch", "/usr/local/bin/x", check=False).returncode != 0, \
            "the root filesystem should be read-only"
        request_id = api.ask("Keep this across a restart?", ["yes", "no"])
        podman("stop", "--time", "20", first)

        # A new container on the same volume finds the request and the key.
        second = podman.start(image, env=env, options=options)
        api.wait_ready(describe=lambda: podman.logs(second))
        status, record = api.call("GET", f"/v1/requests/{request_id}")
        assert status == 200 and record["status"] == "pending"
        api.answer(request_id, "no")
        assert answer_of(api.call("GET", f"/v1/requests/{request_id}")[1]) == "no"
    finally:
        podman.cleanup()
        podman("volume", "rm", "--force", volume, check=False)


def test_ready_soon_after_podman_run(podman, image, tmp_path, admin_key):
    """`podman run` to a 200 from /readyz on SQLite (the handbook quotes the release build's)."""
    port = free_port()
    start = time.monotonic()
    name = podman.start(image, env={"CLARIFY_LISTEN": f"127.0.0.1:{port}",
                                    "CLARIFY_ADMIN_KEY_FILE": "/run/secrets/admin-key"},
                        options=key_secret(tmp_path, admin_key))
    Api(f"http://127.0.0.1:{port}").wait_ready(within=30, describe=lambda: podman.logs(name))
    elapsed = time.monotonic() - start
    print(f"podman run -> /readyz: {elapsed:.2f} s (debug build, vfs storage)")
    assert elapsed < 15


def figures() -> dict[str, float]:
    """BENCHMARKS.md's "Figures the handbook quotes", the sizes in MB."""
    text = (ROOT / "BENCHMARKS.md").read_text()
    table = text[text.index("## Figures the handbook quotes"):]
    found = {}
    for name, number, unit in re.findall(r"^\| `([a-z0-9-]+)` \| ([\d.,]+) (MB|KiB|MiB|GiB|GB|kB) \|", table, re.M):
        scale = {"kB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1024, "MiB": 2**20, "GiB": 2**30}[unit]
        found[name] = float(number.replace(",", "")) * scale / 1e6
    return found


def test_the_cost_pages_image_figures_are_its_base_and_binary_as_podman_ships_them(podman, image, tmp_path):
    """costs.md's image sizes are the base's plus the binary's: uncompressed, exactly (within
    rounding); as pushed, the base's and the binary's `gzip -6` sizes each scaled by what podman's
    own compression makes of that kind of layer in the image built here (within 3 %), since a
    registry stores what podman pushes, not what `gzip` makes."""
    layers = {}
    for compress in (False, True):
        pushed = tmp_path / f"pushed-{compress}"
        podman("push", *(["--compress", "--compression-format", "gzip"] if compress else []), image, f"dir:{pushed}")
        manifest = json.loads((pushed / "manifest.json").read_text())
        layers[compress] = [pushed / layer["digest"].split(":")[1] for layer in manifest["layers"]]
    base = os.environ["CLARIFY_TEST_BASE_IMAGE"]
    count = len(inspect(podman, base)["RootFS"]["Layers"])
    plain = [p.stat().st_size for p in layers[False]]
    binary = max(range(count, len(plain)), key=lambda i: plain[i])

    def ratio(indexes) -> float:
        pushed = sum(layers[True][i].stat().st_size for i in indexes)
        gzipped = sum(len(gzip.compress(layers[False][i].read_bytes(), compresslevel=6)) for i in indexes)
        return pushed / gzipped

    base_ratio, binary_ratio = ratio(range(count)), ratio([binary])
    print(f"podman's gzip against gzip -6: {base_ratio:.3f} for the base, {binary_ratio:.3f} for the binary")

    f = figures()
    for name in ("binary-stripped", "binary-gzipped", "image-base", "image-base-gzipped",
                 "image-uncompressed", "image-gzipped"):
        assert name in f, f"BENCHMARKS.md's figures have no row {name}"
    # Three figures rounded to 0.1 MB.
    assert abs(f["image-uncompressed"] - (f["image-base"] + f["binary-stripped"])) <= 0.15, \
        f"image-uncompressed {f['image-uncompressed']} MB is not image-base + binary-stripped"
    expected = f["image-base-gzipped"] * base_ratio + f["binary-gzipped"] * binary_ratio
    assert abs(f["image-gzipped"] / expected - 1) <= 0.03, (
        f"image-gzipped {f['image-gzipped']} MB; the base's {f['image-base-gzipped']} MB and the binary's "
        f"{f['binary-gzipped']} MB (gzip -6) as podman compresses them make {expected:.1f} MB")


def test_a_first_start_without_a_public_url_prints_a_login_link_that_opens(podman, image):
    """The image listens on 0.0.0.0; its first start's login link names loopback, which a
    browser on the host opens through the published port."""
    port = free_port()
    name = podman.start(image, env={"CLARIFY_LISTEN": f"0.0.0.0:{port}"})
    Api(f"http://127.0.0.1:{port}").wait_ready(describe=lambda: podman.logs(name))
    links = re.findall(r"\S+/login/\S+", podman.logs(name))
    assert links, podman.logs(name)
    assert links[0].startswith(f"http://127.0.0.1:{port}/login/"), links
    opener = urllib.request.build_opener(NoRedirect)
    try:
        opener.open(links[0], timeout=10)
        raise AssertionError("the login link should redirect to the inbox")
    except urllib.error.HTTPError as err:
        assert err.code == 303, err


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None
