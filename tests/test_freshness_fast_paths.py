"""The scoped assessment's shortcuts give the outcomes of the general judge (issue 13, freshness cost).

Each shortcut is checked against the code it stands in for, on real files and real stats:

* ``units.unchanged_signature`` (a plain signature cursor naming exactly a file's stat) is True only where
  the signature rule over the parsed cursor says ``up_to_date``, and is True for the cursor as Obelisk writes it
  (so the shortcut is taken at all);
* ``tally.judge_files_in_scope`` counts every file as ``judge_in_scope`` of its unit does, listed or not;
* ``candidates._trie`` holds exactly the directories on the way to each known file;
* ``scope.prepare_roots`` with the roots' recorded real paths resolves nothing and keeps those paths;
* ``markers.marker_source`` names the source exactly where the marker's pattern matches the key whole.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from obelisk_session_evidence.index.cursors import _parse_general
from obelisk_session_evidence.index.freshness.candidates import _trie
from obelisk_session_evidence.index.freshness.context import Ctx, Unit
from obelisk_session_evidence.index.freshness.markers import marker_source
from obelisk_session_evidence.index.freshness.scope import norm_path, prepare_roots
from obelisk_session_evidence.index.freshness.scoped import _known_paths
from obelisk_session_evidence.index.freshness.tally import Tally, judge_files_in_scope, judge_in_scope
from obelisk_session_evidence.index.freshness.units import _judge_file, unchanged_signature


def _ms_text(ns: int) -> str:
    """A millisecond time as Node's ``String(mtimeMs)`` writes it (shortest round trip, no ``.0``)."""
    text = repr(ns // 10**9 * 1000.0 + (ns % 10**9) / 1e6)
    return text[:-2] if text.endswith(".0") else text


def obelisk_cursor(path: Path, lines: int = 3) -> str:
    """The five-part signature cursor Obelisk stores for a file (``mtimeMs:lines:size:ctimeMs:ino``)."""
    s = path.stat()
    return f"{_ms_text(s.st_mtime_ns)}:{lines}:{s.st_size}:{_ms_text(s.st_ctime_ns)}:{s.st_ino}"


@pytest.fixture(scope="module")
def transcript(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fast") / "session.jsonl"
    path.write_text('{"type":"user"}\n' * 3)
    return path


def _reference(path: Path, cursor: str, tol: float = 1.0) -> str:
    ctx = Ctx(stat=os.stat, max_head_bytes=64 * 1024, tol=tol, roots=("/",), rows={})
    return _judge_file(ctx, Unit(str(path), "claude", "jsonl"), _parse_general(cursor, "claude"), path.stat())


def test_obelisk_cursor_of_an_unchanged_file_takes_the_shortcut(transcript: Path) -> None:
    cursor = obelisk_cursor(transcript)
    assert unchanged_signature(cursor, transcript.stat())
    assert _reference(transcript, cursor) == "up_to_date"


# Field texts around the real value: exact, off by a little or a lot, other spellings of the same number.
_SHIFTS = [0.0, 0.0004, -0.0004, 0.5, -0.5, 0.999, -0.999, 1.0, -1.0, 1.5, -1.5, 2.0, 1000.0]
_FORMS = ["repr", "whole", "whole.", "zero-padded", "exp", "negative", "fixed3", "junk", "fraction-exp",
          "fraction-junk", "fraction-digit"]
_INTS = ["exact", "plus1", "minus1", "zero-padded", "exp", "junk", "empty"]
_TIME_SHIFTS = st.sampled_from(_SHIFTS)
_TIME_FORMS = st.sampled_from(_FORMS)
_INT_FORMS = st.sampled_from(_INTS)


def _time_text(ns: int, shift: float, form: str) -> str:
    value = ns / 1e6 + shift
    return {"repr": repr(value), "whole": str(int(value)), "whole.": f"{int(value)}.",
            "zero-padded": f"0{int(value)}", "exp": f"{value:e}", "negative": f"-{value!r}",
            "fixed3": f"{value:.3f}", "junk": f"{int(value)}x", "fraction-exp": f"{int(value)}.5e3",
            "fraction-junk": f"{int(value)}.5x", "fraction-digit": f"{int(value)}.\u00b2"}[form]


def _int_text(value: int, form: str) -> str:
    return {"exact": str(value), "plus1": str(value + 1), "minus1": str(max(value - 1, 0)),
            "zero-padded": f"0{value}", "exp": f"{float(value):e}", "junk": f"{value}a", "empty": ""}[form]


_LINE_TEXTS = ["3", "0", "17", "x", "", "\u0663", "\u00b2", "3.0", "-3"]
_LINES = st.sampled_from(_LINE_TEXTS)
_TAILS = [":9", " ", "\n", ":"]


def _variant(path: Path, changed: dict[str, str]) -> str:
    """Obelisk's cursor for ``path`` with the named fields written as given (``tail``: text after it)."""
    s = path.stat()
    fields = {"mtime": _ms_text(s.st_mtime_ns), "lines": "3", "size": str(s.st_size),
              "ctime": _ms_text(s.st_ctime_ns), "ino": str(s.st_ino), "tail": "", **changed}
    return ":".join(fields[name] for name in ("mtime", "lines", "size", "ctime", "ino")) + fields["tail"]


def test_every_single_field_variant_is_accepted_only_where_the_rule_agrees(transcript: Path) -> None:
    """Each field of Obelisk's cursor written every other way (one at a time, all of them): the shortcut
    accepts only what the signature rule calls up to date, and declines at least every changed value."""
    s = transcript.stat()
    variants = [{"mtime": _time_text(s.st_mtime_ns, d, f)} for d in _SHIFTS for f in _FORMS]
    variants += [{"ctime": _time_text(s.st_ctime_ns, d, f)} for d in _SHIFTS for f in _FORMS]
    variants += [{"size": _int_text(s.st_size, f)} for f in _INTS] + [{"ino": _int_text(s.st_ino, f)} for f in _INTS]
    variants += [{"lines": text} for text in _LINE_TEXTS] + [{"tail": text} for text in _TAILS]
    accepted = 0
    for changed in variants:
        cursor = _variant(transcript, changed)
        if unchanged_signature(cursor, s):
            accepted += 1
            assert _reference(transcript, cursor) == "up_to_date", cursor
    assert 0 < accepted < len(variants)


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changed=st.sets(st.sampled_from(["mtime", "lines", "size", "ctime", "ino", "tail"]), max_size=2),
       m_shift=_TIME_SHIFTS, m_form=_TIME_FORMS, c_shift=_TIME_SHIFTS, c_form=_TIME_FORMS,
       size=_INT_FORMS, ino=_INT_FORMS, lines=_LINES, tail=st.sampled_from(_TAILS))
def test_the_shortcut_says_up_to_date_only_where_the_signature_rule_does(
        transcript: Path, changed: set[str], m_shift: float, m_form: str, c_shift: float, c_form: str,
        size: str, ino: str, lines: str, tail: str) -> None:
    """Obelisk's cursor for the file with at most two of its fields written otherwise (another value or
    another spelling of the same one), or something after it: whenever the shortcut accepts, the rule agrees."""
    s = transcript.stat()
    fields = {"mtime": _ms_text(s.st_mtime_ns), "lines": "3", "size": str(s.st_size),
              "ctime": _ms_text(s.st_ctime_ns), "ino": str(s.st_ino), "tail": ""}
    other = {"mtime": _time_text(s.st_mtime_ns, m_shift, m_form), "lines": lines,
             "size": _int_text(s.st_size, size), "ctime": _time_text(s.st_ctime_ns, c_shift, c_form),
             "ino": _int_text(s.st_ino, ino), "tail": tail}
    fields.update({name: other[name] for name in changed})
    cursor = ":".join(fields[name] for name in ("mtime", "lines", "size", "ctime", "ino")) + fields["tail"]
    if unchanged_signature(cursor, s):
        assert _reference(transcript, cursor) == "up_to_date", cursor


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet="0123456789.:-e ", max_size=60))
def test_the_shortcut_never_accepts_what_the_rule_does_not_on_any_text(transcript: Path, text: str) -> None:
    if unchanged_signature(text, transcript.stat()):
        assert _reference(transcript, text) == "up_to_date", text


@pytest.mark.parametrize("field", ["size", "mtime", "ctime", "ino"])
def test_the_shortcut_declines_every_changed_field(transcript: Path, field: str) -> None:
    s = transcript.stat()
    fields = {"mtime": _ms_text(s.st_mtime_ns), "size": str(s.st_size), "ctime": _ms_text(s.st_ctime_ns),
              "ino": str(s.st_ino)}
    fields[field] = str(int(float(fields[field])) + (5 if field in ("mtime", "ctime") else 1))
    cursor = f"{fields['mtime']}:3:{fields['size']}:{fields['ctime']}:{fields['ino']}"
    assert not unchanged_signature(cursor, s)


# ------------------------------------------------------------------------- judge_files_in_scope


def _files(tmp_path: Path) -> tuple[dict[str, tuple[str, float | None, int | None, str | None]], list[str]]:
    """Files in every state the judge tells apart, with their rows: unchanged, grown, legacy cursor, NULL
    cursor, unknown cursor, no row, gone, and a row kept only under the file's resolved path."""
    rows: dict[str, tuple[str, float | None, int | None, str | None]] = {}
    paths: list[str] = []

    def add(name: str, cursor: str | None, *, row: bool = True, keep: bool = True) -> Path:
        path = tmp_path / name
        path.write_text('{"type":"user"}\n' * 3)
        text = cursor if cursor != "OBELISK" else obelisk_cursor(path)
        if row:
            rows[str(path)] = (str(path), path.stat().st_mtime_ns / 1e6, 3, text)
        if not keep:
            path.unlink()
        paths.append(str(path))
        return path

    add("unchanged.jsonl", "OBELISK")
    grown = add("grown.jsonl", "OBELISK")
    with grown.open("a") as fh:
        fh.write('{"type":"user"}\n')
    add("legacy.jsonl", "1:3")
    add("null.jsonl", None)
    add("unknown.jsonl", "what:is:this")
    add("unindexed.jsonl", "OBELISK", row=False)
    add("gone.jsonl", "OBELISK", keep=False)
    target = add("target.jsonl", "OBELISK", row=False)
    rows[str(target)] = (str(target), target.stat().st_mtime_ns / 1e6, 3, obelisk_cursor(target))
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    paths.append(str(link))
    return rows, paths


@pytest.mark.parametrize("gone_is_missing", [False, True])
def test_judging_files_in_a_batch_counts_as_judging_each_unit(tmp_path: Path, gone_is_missing: bool) -> None:
    rows, paths = _files(tmp_path)
    batch = Ctx(stat=os.stat, max_head_bytes=64 * 1024, tol=1.0, roots=(str(tmp_path),), rows=rows)
    batched = Tally()
    judge_files_in_scope(batch, paths, "claude", batched, gone_is_missing=gone_is_missing)
    single = Ctx(stat=os.stat, max_head_bytes=64 * 1024, tol=1.0, roots=(str(tmp_path),), rows=rows)
    each = Tally()
    for path in paths:
        if gone_is_missing and not os.path.lexists(path):
            each.missing_on_disk += 1
            continue
        judge_in_scope(single, Unit(path, "claude", "jsonl"), each)
    assert (batched.up_to_date, sorted(batched.stale), sorted(batched.unindexed), batched.unknown_cursor,
            batched.unreadable, batched.missing_on_disk) == \
           (each.up_to_date, sorted(each.stale), sorted(each.unindexed), each.unknown_cursor, each.unreadable,
            each.missing_on_disk)
    assert batch.reasons == single.reasons
    assert batched.up_to_date >= 2 and batched.stale and batched.unindexed  # every state was met
    assert batched.missing_on_disk == (1 if gone_is_missing else 0)


def test_a_listed_file_the_index_does_not_hold_is_not_statted(tmp_path: Path) -> None:
    """As ``judge_in_scope`` decides it: no row (under the path or its resolved form) is unindexed, unstatted."""
    path = tmp_path / "new.jsonl"
    path.write_text("{}\n")
    statted: list[str] = []

    def counting(name: str) -> os.stat_result:
        statted.append(name)
        return os.stat(name)

    ctx = Ctx(stat=counting, max_head_bytes=1024, tol=1.0, roots=(str(tmp_path),), rows={})
    tally = Tally()
    judge_files_in_scope(ctx, [str(path)], "claude", tally)
    assert tally.unindexed == [str(path)] and statted == []


def test_a_tolerance_under_one_millisecond_never_takes_the_shortcut(tmp_path: Path) -> None:
    """The whole-millisecond test holds for a tolerance of 1 ms or more; a finer one judges each cursor."""
    path = tmp_path / "a.jsonl"
    path.write_text("{}\n")
    s = path.stat()
    late = _ms_text(s.st_mtime_ns + 600_000)  # 0.6 ms later, the same whole millisecond or the next
    cursor = f"{late}:1:{s.st_size}:{_ms_text(s.st_ctime_ns)}:{s.st_ino}"
    rows = {str(path): (str(path), None, 1, cursor)}
    fine = Ctx(stat=os.stat, max_head_bytes=1024, tol=0.1, roots=(str(tmp_path),), rows=rows)
    tally = Tally()
    judge_files_in_scope(fine, [str(path)], "claude", tally)
    assert tally.stale == [str(path)]


# ------------------------------------------------------------------------------------ trie, roots


def _reference_dirs(files: list[str], top: str) -> set[tuple[str, ...]]:
    out: set[tuple[str, ...]] = set()
    for path in files:
        if path.startswith(top + "/"):
            parts = path[len(top) + 1:].split("/")[:-1]
            out.update(tuple(parts[:depth]) for depth in range(1, len(parts) + 1))
    return out


def _trie_dirs(trie: dict[str, dict[str, object]], prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    out: set[tuple[str, ...]] = set()
    for name, below in trie.items():
        out.add((*prefix, name))
        out |= _trie_dirs(below, (*prefix, name))  # type: ignore[arg-type]
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["2025", "01", "02", "x", "r.jsonl"]), min_size=1, max_size=4),
                max_size=6),
       st.sampled_from(["/t", "/u"]))
def test_trie_holds_exactly_the_directories_on_the_way(parts: list[list[str]], top: str) -> None:
    files = ["/t/" + "/".join(p) for p in parts] + ["/elsewhere/2025/a.jsonl", "/t"]
    dirs = {path.rpartition("/")[0] for path in files}  # what _known_paths hands over: the files' directories
    assert _trie_dirs(_trie(dirs, top)) == _reference_dirs(files, top)  # type: ignore[arg-type]


#: Paths as text of path characters, and absolute paths of components (most of them normal, some not: an
#: empty, ``.`` or ``..`` component, a short name, a NUL).
_RAW_PATHS = st.one_of(
    st.text(alphabet="/.ab\x00", max_size=9),
    st.lists(st.sampled_from(["", ".", "..", "a", "ab", "abc", "s.jsonl", "x\x00y", "p-q", "p-q", "s.jsonl"]),
             min_size=1, max_size=4).map(lambda names: "/" + "/".join(names)))


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.tuples(_RAW_PATHS, st.sampled_from(["claude", "codex", "pi"])), max_size=6))
def test_known_paths_are_normalised_as_one_by_one(files: list[tuple[str, str]]) -> None:
    """Taking the paths whole when every one is normal gives the paths ``norm_path`` gives each file."""
    expected: dict[str, str] = {}
    for raw, source in files:
        path = norm_path(raw)
        if path is not None and source in ("claude", "codex"):
            expected[path] = source
    expected_dirs = {path.rpartition("/")[0] for path in expected}  # the text before each one's last slash
    assert _known_paths(files, ["claude", "codex"]) == (expected, expected_dirs)


def test_known_paths_that_are_not_text_are_normalised_or_dropped_one_by_one(tmp_path: Path) -> None:
    files = [(str(tmp_path / "a.jsonl"), "claude"), (tmp_path / "b.jsonl", "codex"), (None, "claude"),
             (str(tmp_path) + "//c.jsonl", "claude")]
    known, dirs = _known_paths(files, ["claude", "codex"])  # type: ignore[arg-type]
    assert known == {str(tmp_path / "a.jsonl"): "claude", str(tmp_path / "b.jsonl"): "codex",
                     str(tmp_path / "c.jsonl"): "claude"}
    assert dirs == {str(tmp_path)}


def test_recorded_real_roots_are_used_without_resolving(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    resolved, ok = prepare_roots([str(link)], os.stat)
    assert ok and resolved == (str(link), str(real))
    recorded, ok = prepare_roots([str(link)], os.stat, real_paths=[str(tmp_path / "recorded")])
    assert ok and recorded == (str(link), str(tmp_path / "recorded"))  # the record decides, as in retrieval
    missing, ok = prepare_roots([str(tmp_path / "nowhere")], os.stat, real_paths=[])
    assert not ok and missing == (str(tmp_path / "nowhere"),)


def test_a_time_before_1970_never_takes_the_shortcut(tmp_path: Path) -> None:
    """A negative whole millisecond does not bound the value as a positive one does (``-5.9`` lies below
    ``-5``): such a cursor is judged in full (the rule does not call it up to date)."""
    path = tmp_path / "old.jsonl"
    path.write_text("{}\n")
    os.utime(path, ns=(-4_500_000, -4_500_000))  # -4.5 ms: its whole millisecond (floor) is -5
    cursor = _variant(path, {"mtime": "-5.9"})
    assert not unchanged_signature(cursor, path.stat())
    assert _reference(path, cursor) != "up_to_date"


#: The provider transcript marker as a pattern (Obelisk's key: ``__<source>_canonical_transcript_v<n>__``).
_MARKER_PATTERN = re.compile(r"__(.+)_canonical_transcript_v\d+__")
_MARKER_PIECES = ["__", "_canonical_transcript_v", "_canonical_transcript_", "\n", "3", "42", "\u0663", "\u00b2",
                  "codex", "_", "v", ""]


@settings(max_examples=3000, deadline=None)
@given(st.one_of(st.text(max_size=40),
                 st.lists(st.one_of(st.sampled_from(_MARKER_PIECES), st.text(max_size=3)), max_size=8).map("".join)))
def test_marker_source_names_the_source_exactly_where_the_pattern_matches(key: str) -> None:
    match = _MARKER_PATTERN.fullmatch(key)
    assert marker_source(key) == (match.group(1) if match else None)


@pytest.mark.parametrize(("key", "source"), [
    ("__codex_canonical_transcript_v3__", "codex"),
    ("__a_canonical_transcript_v_canonical_transcript_v12__", "a_canonical_transcript_v"),
    ("__claude_canonical_transcript_v\u0663__", "claude"),  # any decimal digit, as the pattern's \\d
    ("__claude_canonical_transcript_v\u00b2__", None),  # a superscript is a digit but not a decimal one
    ("__cla\nude_canonical_transcript_v3__", None), ("___canonical_transcript_v3__", None),
    ("__codex_canonical_transcript_v__", None), ("__codex_canonical_transcript_v3_", None),
    ("_codex_canonical_transcript_v3__", None), ("__last_build__", None),
])
def test_marker_source_on_the_edges(key: str, source: str | None) -> None:
    assert marker_source(key) == source
