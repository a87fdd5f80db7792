"""The Deploying pages (docs/src/deploying) as a new user follows them: the image built with the
command image.md shows keeps its health check, the base image.md names is the Containerfile's,
and every default image name is one a user can build here or is marked as one to replace. The compose
page's commands are checked in test_compose.py.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import tempfile
from pathlib import Path

import yaml

from conftest import ROOT, need

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
