"""The release archive: scripts/release run in a copy of the tracked files alone (a clean tree),
the archive unpacked elsewhere, its checksums verified, its binary stripped and run (`--version`,
`serve` on a temporary directory answering /healthz); and the systemd unit it carries passing
`systemd-analyze verify`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from conftest import ROOT, Api, free_port, need_tool, run

TARGET = "x86_64-unknown-linux-gnu"


@pytest.fixture(scope="module")
def release(clarify_bin, tmp_path_factory) -> dict:
    """scripts/release from a copy of `git ls-files` (no build output, nothing untracked)."""
    tree = tmp_path_factory.mktemp("clean-tree")
    files = run(["git", "ls-files", "-z"], cwd=ROOT).stdout.split("\0")
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file():
            dest = tree / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(source.read_bytes())
            dest.chmod(source.stat().st_mode)
    out = tmp_path_factory.mktemp("dist")
    result = run([str(tree / "scripts" / "release"), "--binary", str(clarify_bin), str(out)], cwd=tree)
    version = run([str(clarify_bin), "--version"]).stdout.split()[1]
    return {"out": out, "printed": result.stdout.strip().splitlines()[-1], "version": version}


def test_archive_is_named_by_version_and_target_and_checksummed(release, tmp_path):
    out = release["out"]
    name = f"clarify-{release['version']}-{TARGET}.tar.gz"
    assert release["printed"] == str(out / name), "scripts/release prints the archive's path last"
    assert sorted(p.name for p in out.iterdir()) == sorted([name, "SHA256SUMS"])
    sums = (out / "SHA256SUMS").read_text()
    assert re.fullmatch(rf"[0-9a-f]{{64}}  {re.escape(name)}\n", sums), sums
    assert run(["sha256sum", "--check", "--strict", "SHA256SUMS"], cwd=out).returncode == 0
    # A changed byte (in a copy) fails the check.
    copy = tmp_path / "dist"
    shutil.copytree(out, copy)
    data = bytearray((copy / name).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (copy / name).write_bytes(bytes(data))
    assert subprocess.run(["sha256sum", "--check", "SHA256SUMS"], cwd=copy, capture_output=True).returncode != 0


@pytest.fixture(scope="module")
def unpacked(release, tmp_path_factory) -> Path:
    archive = Path(release["printed"])
    run(["sha256sum", "--check", "--strict", "SHA256SUMS"], cwd=archive.parent)
    elsewhere = tmp_path_factory.mktemp("unpacked")
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        prefix = f"clarify-{release['version']}-{TARGET}"
        assert sorted(names) == sorted([prefix] + [f"{prefix}/{f}" for f in (
            "clarify", "LICENSE", "README.md", "clarify.example.toml", "clarify.service")]), names
        for member in tar.getmembers():
            assert member.uid == 0 and member.gid == 0 and not member.uname
        tar.extractall(elsewhere, filter="data")
    return elsewhere / prefix


def test_the_binary_is_stripped_and_says_its_version_and_commit(unpacked, release, clarify_bin):
    binary = unpacked / "clarify"
    assert os.access(binary, os.X_OK)
    sections = run(["readelf", "-S", "-W", str(binary)]).stdout
    assert ".symtab" not in sections and ".debug_line" not in sections, "the binary should be stripped"
    printed = run([str(binary), "--version"]).stdout.strip()
    # A release build names its commit and date; the debug build the tests package says
    # `unknown` for both (its build does not ask git).
    assert re.fullmatch(rf"clarify {re.escape(release['version'])} "
                        rf"\(([0-9a-f]{{7,40}} \d{{4}}-\d{{2}}-\d{{2}}|unknown unknown)\)", printed), printed
    assert printed == run([str(clarify_bin), "--version"]).stdout.strip()


def test_the_unpacked_binary_serves(unpacked, tmp_path):
    port = free_port()
    server = subprocess.Popen([str(unpacked / "clarify"), "serve", "--listen", f"127.0.0.1:{port}"],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        Api(f"http://127.0.0.1:{port}").wait_ready(path="/healthz", within=30)
        assert (tmp_path / "clarify.db").exists(), "the default store is ./clarify.db"
    finally:
        server.terminate()
        assert server.wait(timeout=20) == 0, server.stdout.read()


def test_the_systemd_unit_verifies(unpacked, tmp_path):
    analyze = need_tool("systemd-analyze", "the systemd unit is checked with `systemd-analyze verify`")
    unit = (unpacked / "clarify.service").read_text()
    assert "ExecStart=/usr/local/bin/clarify serve" in unit
    for setting in ("DynamicUser=yes", "StateDirectory=clarify", "LimitNOFILE=", "ProtectSystem=strict",
                    "NoNewPrivileges=yes", "KillSignal=SIGTERM"):
        assert setting in unit, setting
    # verify checks that ExecStart names an executable: point it at the unpacked one.
    local = tmp_path / "clarify.service"
    local.write_text(unit.replace("/usr/local/bin/clarify", str(unpacked / "clarify")))
    result = subprocess.run([analyze, "verify", str(local)], capture_output=True, text=True)
    assert result.returncode == 0 and not result.stderr.strip() and not result.stdout.strip(), \
        result.stdout + result.stderr
    # The check can fail: a misspelt setting is reported.
    local.write_text(local.read_text().replace("ProtectSystem=strict", "ProtectSystm=strict"))
    result = subprocess.run([analyze, "verify", str(local)], capture_output=True, text=True)
    assert "ProtectSystm" in result.stderr


def test_the_binary_needs_only_what_the_systemd_page_says(unpacked):
    """systemd.md's libraries and glibc version against the binary's dynamic section and the
    highest GLIBC_ symbol version it asks for."""
    binary = str(unpacked / "clarify")
    dynamic = run(["readelf", "--dynamic", "-W", binary]).stdout
    needed = sorted(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic))
    symbols = run(["readelf", "--dyn-syms", "-W", binary]).stdout
    versions = {tuple(int(x) for x in v.split(".")) for v in re.findall(r"@GLIBC_(\d+(?:\.\d+)+)", symbols)}
    highest = ".".join(map(str, max(versions)))
    page = (ROOT / "docs" / "src" / "deploying" / "systemd.md").read_text()
    row = next(line for line in page.splitlines() if line.startswith("| `clarify` |"))
    stated_libs = sorted(re.findall(r"`(lib[\w+-]+)`", row))
    # The loader and the kernel's vDSO are the system's, not libraries the binary names.
    named = sorted(n.split(".so")[0] for n in needed if not n.startswith("ld-linux"))
    assert named == stated_libs, f"systemd.md names {stated_libs}; the binary needs {needed}"
    stated = re.search(r"glibc (\d+\.\d+) or newer", row)
    assert stated, f"systemd.md should say which glibc the binary needs: {row}"
    assert stated.group(1) == highest, \
        f"systemd.md says glibc {stated.group(1)} or newer; the binary's highest symbol version is GLIBC_{highest}"
