"""Issue 12, item 1: one set of path-boundary rules (provider/paths.py) for the scope set, the row re-check,
the freshness walk and the repository-relative display of paths."""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from obelisk_session_evidence.paths import (
    Roots,
    lexical,
    real,
    relative_to_roots,
    strip_roots,
    under_root,
)

_PART = st.sampled_from(["a", "b", "repo", "..", ".", "", "x.y", "-"])
_PATHS = st.lists(_PART, min_size=0, max_size=8).map(lambda parts: "/" + "/".join(parts))


def test_lexical_normalises_and_refuses_what_still_climbs() -> None:
    assert lexical("/r/../other-repo") == "/other-repo"
    assert lexical("/r//../other-repo") == "/other-repo"
    assert lexical("/r/./a//b/") == "/r/a/b"
    assert lexical("/") == "/"
    assert lexical("/..") is None
    assert lexical("/a/../../b") is None
    assert lexical("relative/path") is None
    assert lexical("") is None and lexical(None) is None
    assert lexical("/a\x00b") is None


@given(_PATHS)
@settings(max_examples=300, deadline=None)
def test_lexical_agrees_with_posix_where_it_does_not_refuse(path: str) -> None:
    norm = lexical(path)
    depth = 0
    climbs = False
    for part in path.split("/"):
        if part == "..":
            depth -= 1
            climbs = climbs or depth < 0
        elif part not in ("", "."):
            depth += 1
    assert (norm is None) == climbs
    if norm is not None:
        assert norm == posixpath.normpath("/" + path.lstrip("/"))
        assert ".." not in norm.split("/") and "//" not in norm and lexical(norm) == norm


@given(_PATHS, _PATHS)
@settings(max_examples=300, deadline=None)
def test_under_root_is_a_path_boundary_check_on_normalised_paths(path: str, root: str) -> None:
    norm, base = lexical(path), lexical(root)
    expected = (norm is not None and base is not None
                and (norm == base or norm.startswith(base.rstrip("/") + "/")))
    assert under_root(path, [root]) == expected


def test_under_root_boundaries() -> None:
    assert under_root("/src/app", ["/src/app"]) and under_root("/src/app/x", ["/src/app/"])
    assert not under_root("/src/appx", ["/src/app"])
    assert not under_root("/src/app/../other", ["/src/app"])
    assert not under_root("/src/app//../other", ["/src/app"])
    assert under_root("/anything", ["/"])
    assert not under_root("/src/app/../../..", ["/"])


def test_real_resolves_symlinks_and_applies_dotdot_after_them(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    outside = tmp_path / "outside" / "deep"
    root.mkdir()
    outside.mkdir(parents=True)
    (root / "link").symlink_to(outside)
    base = os.path.realpath(tmp_path)
    assert real(str(root / "link")) == f"{base}/outside/deep"
    # The kernel applies ".." to the symlink's target, not to the spelling.
    assert real(str(root / "link") + "/../x") == f"{base}/outside/x"
    # A path that does not exist is normalised lexically.
    assert real(str(root) + "/missing/../also-missing") == f"{base}/repo/also-missing"
    assert real("/nowhere/../../x") is None


def test_roots_decide_by_real_path_and_bind_every_spelling(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (tmp_path / "outside").mkdir()
    (repo / "escape").symlink_to(tmp_path / "outside")
    alias = tmp_path / "alias"
    alias.symlink_to(repo)
    real_repo = os.path.realpath(repo)
    roots = Roots.of([str(alias)])
    assert set(roots.spellings) == {str(alias), real_repo}
    assert roots.real_paths == (real_repo,)
    # A path recorded inside a spelling is decided as recorded, a symlink on it (``escape``) not followed.
    for inside in (str(repo), str(repo / "src"), str(alias), f"{alias}/src", f"{repo}/src/../lib",
                   str(repo / "escape"), f"{repo}/escape/x"):
        assert roots.contains(inside), inside
    for outside in (f"{repo}/../outside", f"{repo}//../outside", f"{repo}x", "relative", None, 3, "/../..",
                    str(tmp_path / "outside")):
        assert not roots.contains(outside), outside
    # A real path recorded at enable decides, whatever the spelling now points at.
    stored = Roots.of([str(alias)], ["/somewhere/else"])
    assert stored.real_paths == ("/somewhere/else",) and not stored.contains(str(repo))
    assert "/somewhere/else" in stored.spellings and str(alias) in stored.spellings


def test_roots_of_takes_any_iterable_and_contains_decides_once_per_instance(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    link = repo / "link"
    link.symlink_to(repo / "src")
    real_repo = os.path.realpath(repo)
    alias = tmp_path / "alias"
    alias.symlink_to(repo)
    # A generator of spellings is read once and still gives both the spelling and the real path.
    assert Roots.of(spelling for spelling in [str(alias)]).spellings == (str(alias), real_repo)
    roots = Roots.of(spelling for spelling in [f"{repo}/"])
    assert roots.spellings == (real_repo,) and roots.real_paths == (real_repo,)
    # A recorded value that is not a string (a JSON list, a number) is outside, never an error.
    for odd in (["/x"], {"p": 1}, 3, None):
        assert roots.contains(odd) is False
    # A path recorded under a spelling is decided as recorded: a link re-pointed after the session does not move it.
    assert roots.contains(str(link))
    link.unlink()
    link.symlink_to(tmp_path / "outside")
    assert roots.contains(str(link)) and Roots.of([str(repo)]).contains(str(link))
    # A path recorded under no spelling is resolved, once per instance (one request): a symlink retargeted in
    # between does not change that request's answer; a new instance (the next request) sees the new target.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.symlink_to(repo / "src")
    assert roots.contains(str(elsewhere))
    elsewhere.unlink()
    elsewhere.symlink_to(tmp_path / "outside")
    assert roots.contains(str(elsewhere))
    assert not Roots.of([str(repo)]).contains(str(elsewhere))
    # What was resolved is neither part of equality nor of the repr (recorded paths stay out of messages),
    # and the roots of a request cannot be changed once made.
    fresh = Roots.of([f"{repo}/"])
    assert roots == fresh and str(link) not in repr(roots)
    with pytest.raises(AttributeError):
        roots.real_paths = ("/",)  # type: ignore[misc]
    assert roots.real_paths == (real_repo,)


def test_relative_to_roots_follows_the_boundary_rules() -> None:
    assert relative_to_roots("/src/app/y/z.py", ["/src/app"]) == "y/z.py"
    assert relative_to_roots("/src/app/y/z.py", ["/src", "/src/app"]) == "y/z.py"  # deepest root first
    assert relative_to_roots("/x/src/app/y", ["/src/app"]) == "/x/src/app/y"
    assert relative_to_roots("/src/appx/y", ["/src/app"]) == "/src/appx/y"
    assert relative_to_roots("/src/app/../other/y", ["/src/app"]) == "/src/app/../other/y"
    assert relative_to_roots("/src/app/./y//z", ["/src/app/"]) == "y/z"
    assert relative_to_roots("/etc/passwd", ["/"]) == "etc/passwd"
    assert relative_to_roots("relative/y", ["/src/app"]) == "relative/y"


@given(_PATHS, _PATHS)
@settings(max_examples=300, deadline=None)
def test_relative_to_roots_is_relative_exactly_for_paths_strictly_inside(path: str, root: str) -> None:
    shown = relative_to_roots(path, [root])
    norm, base = lexical(path), lexical(root)
    if norm is not None and base is not None and norm != base and under_root(norm, [base]):
        assert not shown.startswith("/") and posixpath.join(base, shown) == norm
    else:
        assert shown == path


def test_strip_roots_strips_only_where_a_path_starts() -> None:
    assert strip_roots("see /src/app/y.py and '/src/app/z'", ["/src/app"]) == "see y.py and 'z'"
    assert strip_roots("/x/src/app/y", ["/src/app"]) == "/x/src/app/y"
    assert strip_roots("a/b /c/d", ["/"]) == "a/b c/d"
    assert strip_roots("/src/app/y /src/y", ["/src", "/src/app"]) == "y y"
    assert strip_roots("/src/appx/y", ["/src/app/"]) == "/src/appx/y"
    assert strip_roots("x/src/app/y ~/src/app/y", ["/src/app"]) == "x/src/app/y ~/src/app/y"  # not a path start
    assert strip_roots("/src/app/../other/y", ["/src/app"]) == "/src/app/../other/y"  # climbs out: kept
    assert strip_roots("/src/app//y and /src/app/./z", ["/src/app"]) == "y and z"  # never "/y"
    assert strip_roots("/src/app/a/../b", ["/src/app"]) == "b"
    assert strip_roots("at /src/app, in /src/app/", ["/src/app"]) == "at /src/app, in /src/app/"  # the root itself
    assert strip_roots("https://example.com/src/app/y", ["/src/app"]) == "https://example.com/src/app/y"
    assert strip_roots("/src/app/y", []) == "/src/app/y"


def test_strip_roots_holds_every_spelling_of_a_root_to_the_same_rules(tmp_path: Path) -> None:
    """The operator's spelling (a symlink) and the real path are both stripped, each on path boundaries."""
    repo = tmp_path / "repo"
    repo.mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(repo)
    real_repo = os.path.realpath(repo)
    spellings = Roots.of([str(alias)]).spellings
    text = (f"edited {real_repo}/src/a.py and {alias}/src/b.py; kept {real_repo}x/c.py, {alias}x/d.py, "
            f"{real_repo}/../outside/e.py, {alias}/../outside/f.py, x{real_repo}/g.py; "
            f"{real_repo}//h.py {alias}/./i.py")
    assert strip_roots(text, spellings) == (
        f"edited src/a.py and src/b.py; kept {real_repo}x/c.py, {alias}x/d.py, {real_repo}/../outside/e.py, "
        f"{alias}/../outside/f.py, x{real_repo}/g.py; h.py i.py")
    # Given only one spelling, the other stays absolute: callers pass ``Roots.spellings``.
    assert f"{real_repo}/src/a.py" in strip_roots(text, [str(alias)])


@given(_PATHS, _PATHS)
@settings(max_examples=300, deadline=None)
def test_strip_roots_shows_a_path_as_relative_to_roots_does(path: str, root: str) -> None:
    """One rule for a path alone and a path in text: strip_roots and relative_to_roots agree, in any text."""
    assert strip_roots(path, [root]) == relative_to_roots(path, [root])
    assert strip_roots(f"see {path}: ok", [root]) == f"see {relative_to_roots(path, [root])}: ok"
