"""A session is attributed by the path it was recorded under, not by where a link on that path points today
(issue 30 item 4), end to end through ``answer`` on crafted copies of a fixture database.

A link re-pointed after the session (``~/src/current`` moved from one checkout to the next) must neither take the
session out of the scope it was recorded in nor hand it to the link's new target; only a recorded path the text
does not decide (one holding ``..``, or under no spelling of a root) is resolved
(``tests/integration/test_scope_paths.py``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from obelisk_session_evidence.fixtures.builder import build_fixture

from tests.integration.test_scope_paths import _ask, _plant, _sessions


@pytest.fixture(scope="module")
def base_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_fixture(tmp_path_factory.mktemp("fx") / "current", generation="current").db_path


def _db(base_db: Path, tmp_path: Path) -> Path:
    db = tmp_path / "crafted.sqlite"
    shutil.copyfile(base_db, db)
    return db


def test_a_session_recorded_through_a_link_stays_with_the_checkout_it_was_recorded_in(base_db: Path,
                                                                                      tmp_path: Path) -> None:
    """The scope was enabled through ``current`` while it pointed at ``app-v1`` (the real root recorded); the
    sessions recorded through it stay in that scope after ``current`` is re-pointed at ``app-v2``, and
    ``app-v2``'s scope does not take them. main dropped them (``current`` resolved to ``app-v2`` today)."""
    db = _db(base_db, tmp_path)
    v1, v2 = tmp_path / "src" / "app-v1", tmp_path / "src" / "app-v2"
    for checkout in (v1, v2):
        (checkout / "pkg").mkdir(parents=True)
    current = tmp_path / "src" / "current"
    current.symlink_to(v1, target_is_directory=True)
    real_v1, real_v2 = os.path.realpath(v1), os.path.realpath(v2)
    _plant(db, "s-through-link", str(current))
    _plant(db, "s-through-link-below", f"{current}/pkg")
    _plant(db, "s-in-v1", f"{real_v1}/pkg")
    recorded = {"s-through-link", "s-through-link-below", "s-in-v1"}
    assert _sessions(_ask(db, tmp_path, [str(current)], [real_v1])) == recorded
    current.unlink()
    current.symlink_to(v2, target_is_directory=True)  # re-pointed after recording
    assert _sessions(_ask(db, tmp_path, [str(current)], [real_v1])) == recorded
    assert _sessions(_ask(db, tmp_path, [real_v2], [real_v2])) == set()


def test_a_link_inside_the_root_re_pointed_after_recording_keeps_its_sessions(base_db: Path, tmp_path: Path) -> None:
    """``repo/current`` pointed at ``repo/releases/7`` when the session ran there; re-pointed outside the
    repository later, the session recorded under ``repo/current`` is still the repository's (main dropped it)."""
    db = _db(base_db, tmp_path)
    repo = Path(os.path.realpath(tmp_path)) / "repo"
    (repo / "releases" / "7").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    link = repo / "current"
    link.symlink_to(repo / "releases" / "7", target_is_directory=True)
    _plant(db, "s-current", str(link))
    assert _sessions(_ask(db, tmp_path, [str(repo)])) == {"s-current"}
    link.unlink()
    link.symlink_to(tmp_path / "outside", target_is_directory=True)
    assert _sessions(_ask(db, tmp_path, [str(repo)])) == {"s-current"}
