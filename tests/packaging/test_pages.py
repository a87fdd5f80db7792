"""The Deploying pages (docs/src/deploying) as a new user follows them: the image built with the
command image.md shows keeps its health check, the base image.md names is the Containerfile's,
every default image name is one a user can build here or is marked as one to replace, and the
systemd layout's modes let the service's own (non-root) user read its configuration and keep it
out of the admin key. The compose page's commands are checked in test_compose.py.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import yaml

from conftest import ROOT, need, need_tool, run

PAGES = ROOT / "docs" / "src" / "deploying"
COMPOSE = ROOT / "deploy" / "compose"
CHART = ROOT / "deploy" / "helm" / "clarify"


def shell_lines(page: Path) -> list[str]:
    """The commands of a page's `sh` blocks, one per line, continuations joined, comments cut."""
    lines: list[str] = []
    in_block = False
    pending = ""
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            in_block = not in_block and line.strip() in ("```sh", "```bash")
            continue
        if not in_block:
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        lines.append(pending + line)
        pending = ""
    return lines


def words(command: str) -> list[str]:
    """A command line's words, without its trailing comment."""
    return shlex.split(command, comments=True)


# ---------------------------------------------------------------------------------------------
# The image (image.md)


def test_the_page_names_the_containerfiles_base_and_rust_image():
    containerfile = (ROOT / "Containerfile").read_text()
    page = (PAGES / "image.md").read_text()
    for arg in ("BASE", "RUST_IMAGE"):
        found = re.search(rf"^ARG {arg}=(\S+)$", containerfile, re.M)
        assert found, f"the Containerfile has no default for {arg}"
        assert f"`{found.group(1)}`" in page, \
            f"image.md should name {arg}'s default as the Containerfile has it: `{found.group(1)}`"


def test_the_pages_podman_build_keeps_the_health_check(podman, clarify_bin):
    """image.md's `podman build` line, run over the prebuilt binary and the local base."""
    builds = [words(line) for line in shell_lines(PAGES / "image.md") if line.lstrip().startswith("podman build")]
    assert builds, "image.md shows no `podman build` command"
    base = os.environ.get("CLARIFY_TEST_BASE_IMAGE", "")
    need(bool(base), "no local Debian base image (scripts/packaging makes it with debootstrap, as root)")
    for build in builds:
        context = Path(tempfile.mkdtemp(prefix="clarify-build-"))
        try:
            shutil.copy(clarify_bin, context / "clarify")
            (context / "data").mkdir()
            tag = f"localhost/clarify-test-page:{os.getpid()}"
            args = list(build[2:])
            # The page's own tag and context give way to this suite's; the rest is the page's.
            if "-t" in args:
                i = args.index("-t")
                del args[i:i + 2]
            assert args and args[-1] == ".", f"the page's build should end with its context `.`: {build}"
            args = args[:-1]
            args = [str(ROOT / "Containerfile") if a == "Containerfile" else a for a in args]
            result = podman("build", "--quiet", *args, "-t", tag, "--build-arg", "BINARY=prebuilt",
                            "--build-arg", f"BASE={base}", str(context), timeout=900)
            info = podman("image", "inspect", tag).stdout
            podman("rmi", "--force", tag, check=False)
            assert '"Healthcheck"' in info and "healthcheck" in info, (
                f"`{' '.join(build)}` builds an image without the HEALTHCHECK:\n{result.stderr}")
        finally:
            shutil.rmtree(context, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Image names

# An image reference naming clarify on a registry: host/.../clarify[:tag]. A web address
# (https://github.com/...) is not one, so nothing before the host may be `/` or a word.
CLARIFY_IMAGE = re.compile(r"(?<![\w/.@])((?:[a-z0-9][a-z0-9-]*\.)+[a-z]{2,}(?::\d+)?/(?:[\w.-]+/)*clarify)(?::[\w.${}-]+)?\b")
# Names a user can have: what scripts/image tags here, or a placeholder plainly to replace.
MARKED = re.compile(r"^(localhost/clarify|registry\.example\.com/clarify|REGISTRY/clarify)$")


def deployment_texts() -> dict[str, str]:
    files = [*sorted(COMPOSE.glob("*.yaml")), *sorted(CHART.rglob("*")), *sorted(PAGES.glob("*.md")),
             ROOT / "Containerfile", ROOT / "scripts" / "image"]
    return {str(p.relative_to(ROOT)): p.read_text() for p in files if p.is_file()}


def test_every_clarify_image_name_is_buildable_here_or_marked_to_replace():
    bad = []
    for name, text in deployment_texts().items():
        for found in CLARIFY_IMAGE.finditer(text):
            if not MARKED.match(found.group(1)):
                line = text.count("\n", 0, found.start()) + 1
                bad.append(f"{name}:{line}: {found.group(0)}")
    assert not bad, ("image names nobody can pull (this repository publishes no image); use the "
                     "name scripts/image tags or a registry.example.com placeholder:\n" + "\n".join(bad))


def test_the_compose_files_need_the_image_named_and_the_chart_default_is_a_placeholder():
    for path in sorted(COMPOSE.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        for service, spec in doc["services"].items():
            image = spec.get("image", "")
            if "clarify" not in image.split("/")[-1]:
                continue
            assert re.fullmatch(r"\$\{CLARIFY_IMAGE:\?[^}]+\}", image), \
                f"{path.name}: {service} should require CLARIFY_IMAGE (`${{CLARIFY_IMAGE:?...}}`), not default to {image!r}"
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert MARKED.match(values["image"]["repository"]), values["image"]
    kubernetes = (PAGES / "kubernetes.md").read_text()
    sqlite = kubernetes[kubernetes.index("## Installing with SQLite"):]
    sqlite = sqlite[:sqlite.index("\n## ", 1)]
    assert "image.repository" in sqlite, "the SQLite install must say to set image.repository too"


def test_the_compose_image_check_catches_a_default(tmp_path):
    text = (COMPOSE / "compose.sqlite.yaml").read_text()
    wrong = re.sub(r"\$\{CLARIFY_IMAGE:\?[^}]+\}", "${CLARIFY_IMAGE:-ghcr.io/example-org/clarify:1.0}", text)
    assert wrong != text
    assert [m.group(1) for m in CLARIFY_IMAGE.finditer(wrong)] == ["ghcr.io/example-org/clarify"]
    assert not CLARIFY_IMAGE.search("see https://github.com/clarify-hitl/clarify for the source")


# ---------------------------------------------------------------------------------------------
# systemd (systemd.md)


def install_modes(page: Path) -> dict[str, int]:
    """The modes the page's `install` lines give each path under /etc/clarify."""
    modes: dict[str, int] = {}
    for line in shell_lines(page):
        for part in line.split("|"):
            w = words(part)
            if w[:1] == ["sudo"]:
                w = w[1:]
            # `tee FILE` makes a new file as umask 022 leaves it.
            if w[:1] == ["tee"] and len(w) >= 2 and w[1].startswith("/etc/clarify"):
                modes[w[1]] = 0o644
                continue
            if not w or w[0] != "install" or "-m" not in w:
                continue
            mode = int(w[w.index("-m") + 1], 8)
            target = w[-1]
            if target.startswith("/etc/clarify"):
                modes[target] = mode
    return modes


def test_the_systemd_layout_lets_the_service_read_its_configuration_and_not_the_key(clarify_bin):
    """The page's modes, root-owned as `sudo install` leaves them, read as a dynamic user would."""
    need(os.geteuid() == 0, "the layout is made root-owned and read as another uid, which needs root")
    setpriv = need_tool("setpriv", "the configuration is read as a non-root uid through it (util-linux)")
    page = PAGES / "systemd.md"
    modes = install_modes(page)
    text = page.read_text()
    assert "/etc/clarify" in modes and "/etc/clarify/admin-key" in modes, \
        f"systemd.md should install /etc/clarify and its admin-key with a mode: {modes}"
    # The configuration file as the page installs it, or as an editor makes it under umask 022.
    found = re.search(r"install -m (0\d{3}) clarify\.toml /etc/clarify/clarify\.toml", text)
    modes["/etc/clarify/clarify.toml"] = int(found.group(1), 8) if found else 0o644

    # The unit's user: DynamicUser picks a uid in 61184-65519; nothing of it owns these files.
    uid = 61234
    top = Path(tempfile.mkdtemp(prefix="clarify-etc-"))
    try:
        top.chmod(0o755)
        binary = top / "clarify"
        shutil.copy(clarify_bin, binary)
        binary.chmod(0o755)
        etc = top / "etc" / "clarify"
        etc.mkdir(parents=True)
        (top / "etc").chmod(0o755)
        config = etc / "clarify.toml"
        config.write_text("[server]\nmax_options = 6\n")
        key = etc / "admin-key"
        key.write_text(run([str(binary), "keys", "generate"]).stdout)
        config.chmod(modes["/etc/clarify/clarify.toml"])
        key.chmod(modes["/etc/clarify/admin-key"])
        etc.chmod(modes["/etc/clarify"])
        as_service = [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]

        checked = subprocess.run([*as_service, str(binary), "config", "check", str(config)],
                                 capture_output=True, text=True)
        assert checked.returncode == 0, (
            f"with systemd.md's modes the service's user cannot read its configuration:\n{checked.stderr}")
        peek = subprocess.run([*as_service, "cat", str(key)], capture_output=True, text=True)
        assert peek.returncode != 0, "with systemd.md's modes the service's user can read the admin key file"
    finally:
        shutil.rmtree(top, ignore_errors=True)
