"""Issue 30, item 2: ``provider/outputs.py``'s ``write_file_in``, the one way the operator commands write a file:
plain names only, atomic with its mode, no temp file left behind, and a link or any other non-regular file at
the name refused (the commands that use it, as subprocesses: tests/integration/test_operator_files.py)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest


def test_write_file_in_writes_atomically_with_its_mode_and_leaves_nothing_else(tmp_path: Path) -> None:
    from obelisk_session_evidence.outputs import write_file_in

    path = write_file_in(tmp_path, "a.json", b"one", role="a file", mode=0o600)
    assert path == tmp_path / "a.json" and path.read_bytes() == b"one"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    write_file_in(tmp_path, "a.json", b"two", role="a file", mode=0o600)
    assert path.read_bytes() == b"two"
    with pytest.raises(FileExistsError):
        write_file_in(tmp_path, "a.json", b"three", role="a file", exclusive=True)
    assert path.read_bytes() == b"two"
    assert os.listdir(tmp_path) == ["a.json"]  # no temporary file left behind


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../x", "x\0y", "n" * 256])
def test_write_file_in_takes_plain_names_only(tmp_path: Path, name: str) -> None:
    from obelisk_session_evidence.outputs import write_file_in

    (tmp_path / "in").mkdir()
    with pytest.raises(ValueError, match="plain file name"):
        write_file_in(tmp_path / "in", name, b"x", role="a file")
    assert os.listdir(tmp_path / "in") == [] and sorted(os.listdir(tmp_path)) == ["in"]


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("kind", ["link", "dangling link", "directory"])
def test_write_file_in_refuses_what_is_not_a_regular_file(tmp_path: Path, exclusive: bool, kind: str) -> None:
    from obelisk_session_evidence.errors import UnsafeWriteTarget
    from obelisk_session_evidence.outputs import write_file_in

    victim = tmp_path / "victim"
    if kind == "link":
        victim.write_text("keep me")
    folder = tmp_path / "out"
    folder.mkdir()
    if kind == "directory":
        (folder / "f").mkdir()
    else:
        (folder / "f").symlink_to(victim)
    with pytest.raises(UnsafeWriteTarget) as caught:
        write_file_in(folder, "f", b"x", role="the test file", exclusive=exclusive)
    assert caught.value.code == "unsafe_write_target" and caught.value.detail.startswith("the test file is")
    assert os.listdir(folder) == ["f"]
    assert victim.exists() == (kind == "link") and (kind != "link" or victim.read_text() == "keep me")
