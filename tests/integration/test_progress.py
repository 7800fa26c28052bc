"""Long tools show progress on a terminal and stay quiet when piped (issue 10.8)."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys
from pathlib import Path

from obelisk_session_evidence.progress import progress

from tests.conftest import REPO


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_on_a_terminal_only() -> None:
    tty, pipe = _Tty(), io.StringIO()
    with progress("phase one", stream=tty):
        pass
    with progress("phase one", stream=pipe):
        pass
    assert "phase one" in tty.getvalue() and "done in" in tty.getvalue()
    assert pipe.getvalue() == ""


def _make_fixture(out: Path, stderr: int) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBELISK")}
    return subprocess.run([sys.executable, str(REPO / "tools" / "make-fixture"), str(out), "--large", "3000"],
                          stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=REPO, timeout=300, check=False)


def test_make_fixture_large_shows_progress_on_a_terminal_and_none_when_piped(tmp_path: Path) -> None:
    piped = _make_fixture(tmp_path / "piped", subprocess.PIPE)
    assert piped.returncode == 0
    assert piped.stderr == b""
    assert piped.stdout.count(b"\n") == 1  # the one summary line
    leader, follower = pty.openpty()
    try:
        on_tty = _make_fixture(tmp_path / "tty", follower)
        os.close(follower)
        follower = -1
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    assert on_tty.returncode == 0
    assert b"building a 3,000-message index" in drawn and b"done in" in drawn
