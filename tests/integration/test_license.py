"""Issue 30, item 7: the repository carries the Apache-2.0 license its ``pyproject.toml`` names, and so do the
sdist and the wheel built from it (``license-files``; ``tools/check-installed`` builds and installs them too)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO


def test_the_license_file_is_the_apache_2_license_pyproject_names() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text
    assert "END OF TERMS AND CONDITIONS" in text and text.count("\n") > 190


@pytest.mark.heavy
def test_the_sdist_and_the_wheel_carry_the_license(tmp_path: Path) -> None:
    """Built from a copy of the checkout (the build's own folders never land in it), with the build's own
    isolated environment, as ``tools/check-installed`` builds them."""
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.egg-info", "build",
                                                             "demo-index", "qualification", ".mypy_cache",
                                                             ".ruff_cache", ".pytest_cache", ".hypothesis"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    proc = subprocess.run([sys.executable, "-m", "build", "--outdir", str(tmp_path / "dist"), str(src)],
                          capture_output=True, env=env, cwd=tmp_path, timeout=600, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode(errors="replace")[-3000:]
    license_text = (REPO / "LICENSE").read_bytes()
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    (sdist,) = (tmp_path / "dist").glob("*.tar.gz")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        (in_wheel,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert zf.read(in_wheel) == license_text
        metadata = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
    assert "License-File: LICENSE" in metadata.splitlines()
    with tarfile.open(sdist) as tf:
        (member,) = [m for m in tf.getmembers() if m.name.count("/") == 1 and m.name.endswith("/LICENSE")]
        handle = tf.extractfile(member)
        assert handle is not None and handle.read() == license_text
