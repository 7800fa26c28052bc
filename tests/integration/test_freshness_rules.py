"""The per-provider cursor rules, through the one judging function (``judging.judge_unit``), on real files.

Each cursor shape Obelisk writes (Claude 5-part and legacy 2-part, workflow ``.json``, Codex old/v3/v4, Kimi, Pi
and its tombstone) is written for a real transcript as Obelisk would, then changed one field or one file
property at a time (mtime within and beyond the tolerance, size, ctime, inode, line count, spelling); the
outcome and whether lines had to be counted are checked against the rule the package README states. A property
test holds the signature rule, written out here, against any nearby cursor.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from obelisk_session_evidence.index.freshness import TranscriptMemo, assess_scoped_freshness
from obelisk_session_evidence.index.freshness.context import Ctx, Outcome, Unit, UnitKind
from obelisk_session_evidence.index.freshness.judging import judge_unit
from obelisk_session_evidence.index.freshness.scope import prepare_roots
from obelisk_session_evidence.index.freshness.verdict import marker_source

from tests.integration.test_freshness import (
    _append,
    _b64,
    claude_session,
    codex_session,
    kimi_cursor,
    kimi_session,
    pi_cursor,
    pi_session,
)


def _ms_text(ns: int) -> str:
    """A millisecond time as Node's ``String(stat.mtimeMs)`` writes it (shortest round trip, no ``.0``)."""
    text = repr(ns // 10**9 * 1000.0 + (ns % 10**9) / 1e6)
    return text[:-2] if text.endswith(".0") else text


def _terminated(path: Path) -> int:
    return path.read_bytes().count(b"\n")


def judge(path: Path, cursor: str | None, *, source: str = "claude", kind: UnitKind = "jsonl", tol: float = 1.0,
          mtime: float | None = None, lines: int | None = None) -> tuple[Outcome, int]:
    """(outcome, files whose lines were counted) of ``path`` against a row holding ``cursor``."""
    ctx = Ctx(tol=tol)
    outcome = judge_unit(ctx, Unit(str(path), source, kind), (str(path), mtime, lines, cursor))
    return outcome, ctx.lines_counted


def signature(path: Path, **changed: str) -> str:
    """The five-part cursor Obelisk writes for ``path`` (``mtimeMs:lines:size:ctimeMs:ino``), fields replaced."""
    s = path.stat()
    fields = {"mtime": _ms_text(s.st_mtime_ns), "lines": str(_terminated(path)), "size": str(s.st_size),
              "ctime": _ms_text(s.st_ctime_ns), "ino": str(s.st_ino), **changed}
    return ":".join(fields[name] for name in ("mtime", "lines", "size", "ctime", "ino"))


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    return claude_session(tmp_path / "home", tmp_path / "repo", "s1", n=3)


# ------------------------------------------------------------------ five-part signature (Claude, Codex v3)


def _shifted(path: Path, field: str, delta: float) -> str:
    s = path.stat()
    return repr((s.st_mtime_ns if field == "mtime" else s.st_ctime_ns) / 1e6 + delta)


def _changed(path: Path, change: str) -> dict[str, str]:
    """The cursor fields ``change`` names, written for ``path``."""
    s = path.stat()
    n = _terminated(path)
    return {
        "none": {},
        "mtime+0.5": {"mtime": _shifted(path, "mtime", 0.5)},  # within the 1 ms tolerance
        "mtime-0.9": {"mtime": _shifted(path, "mtime", -0.9)},
        "mtime+2": {"mtime": _shifted(path, "mtime", 2.0)},
        "mtime-2": {"mtime": _shifted(path, "mtime", -2.0)},
        "size+1": {"size": str(s.st_size + 1)},
        "ctime+2": {"ctime": _shifted(path, "ctime", 2.0)},  # a copy or a restore: the lines decide
        "ctime+2, lines+1": {"ctime": _shifted(path, "ctime", 2.0), "lines": str(n + 1)},
        "ino+1": {"ino": str(s.st_ino + 1)},
        "ino+1, lines-1": {"ino": str(s.st_ino + 1), "lines": str(n - 1)},
        # other spellings of the same numbers (JS may print them so): parsed, the same rule
        "mtime as 'W.'": {"mtime": f"{s.st_mtime_ns // 10**6}."},
        "mtime with an exponent": {"mtime": format(s.st_mtime_ns / 1e6, ".17e")},
        "lines as 'n.0'": {"lines": f"{n}.0"},
        "size+1 with an exponent": {"size": format(float(s.st_size + 1), "e")},
    }[change]


@pytest.mark.parametrize("source", ["claude", "codex"])
@pytest.mark.parametrize(("change", "expected"), [
    ("none", ("up_to_date", 0)),
    ("mtime+0.5", ("up_to_date", 0)),
    ("mtime-0.9", ("up_to_date", 0)),
    ("mtime+2", ("stale", 0)),
    ("mtime-2", ("stale", 0)),
    ("size+1", ("stale", 0)),
    ("ctime+2", ("up_to_date", 1)),
    ("ctime+2, lines+1", ("stale", 1)),
    ("ino+1", ("up_to_date", 1)),
    ("ino+1, lines-1", ("stale", 1)),
    ("mtime as 'W.'", ("up_to_date", 0)),
    ("mtime with an exponent", ("up_to_date", 0)),
    ("lines as 'n.0'", ("up_to_date", 0)),
    ("size+1 with an exponent", ("stale", 0)),
])
def test_signature_rule(transcript: Path, source: str, change: str, expected: tuple[str, int]) -> None:
    """(outcome, lines counted): a size or mtime difference is stale without reading; the same size and mtime
    with the same ctime and inode is up to date without reading; otherwise the line count decides."""
    assert judge(transcript, signature(transcript, **_changed(transcript, change)), source=source) == expected


def test_signature_rule_with_a_tolerance_under_one_millisecond(transcript: Path) -> None:
    """0.6 ms later in the cursor: the same whole millisecond or the next, yet beyond a 0.1 ms tolerance."""
    cursor = signature(transcript, mtime=_shifted(transcript, "mtime", 0.6))
    assert judge(transcript, cursor, tol=0.1)[0] == "stale"
    assert judge(transcript, cursor, tol=1.0)[0] == "up_to_date"


def test_signature_rule_before_1970(tmp_path: Path) -> None:
    """A time before 1970 is no JS ``mtimeMs`` Obelisk writes as a plain number: never judged up to date."""
    path = tmp_path / "old.jsonl"
    path.write_text('{"type":"user"}\n')
    os.utime(path, ns=(-4_500_000, -4_500_000))  # -4.5 ms
    assert judge(path, signature(path, mtime="-5.9"))[0] == "unknown_cursor"
    assert judge(path, signature(path, mtime="-4.5"))[0] == "unknown_cursor"


_SHIFTS = [0.0, 0.0004, -0.0004, 0.5, -0.5, 0.999, -0.999, 1.0, -1.0, 1.5, -1.5, 2.0, 1000.0]
_SPELLINGS = ["repr", "fixed3", "whole", "whole."]


def _spelled(value: float, spelling: str) -> str:
    return {"repr": repr(value), "fixed3": f"{value:.3f}", "whole": str(int(value)),
            "whole.": f"{int(value)}."}[spelling]


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(m_shift=st.sampled_from(_SHIFTS), m_spelling=st.sampled_from(_SPELLINGS),
       c_shift=st.sampled_from(_SHIFTS), c_spelling=st.sampled_from(_SPELLINGS),
       size_delta=st.sampled_from([0, 0, 1, -1]), ino_delta=st.sampled_from([0, 0, 1]),
       lines_delta=st.sampled_from([0, 0, 1, -1]), tol=st.sampled_from([1.0, 1.0, 0.5, 2.0]))
def test_signature_rule_holds_for_any_nearby_cursor(transcript: Path, m_shift: float, m_spelling: str,
                                                    c_shift: float, c_spelling: str, size_delta: int,
                                                    ino_delta: int, lines_delta: int, tol: float) -> None:
    """The rule, written out: a size or mtime difference beyond the tolerance is stale; else the same ctime
    (within the tolerance) and inode is up to date; else the line count decides (the file ends in a newline)."""
    s = transcript.stat()
    mtime = _spelled(s.st_mtime_ns / 1e6 + m_shift, m_spelling)
    ctime = _spelled(s.st_ctime_ns / 1e6 + c_shift, c_spelling)
    size, ino, lines = s.st_size + size_delta, s.st_ino + ino_delta, _terminated(transcript) + lines_delta
    cursor = f"{mtime}:{lines}:{size}:{ctime}:{ino}"
    if size != s.st_size or abs(s.st_mtime_ns / 1e6 - float(mtime)) > tol:
        expected = "stale"
    elif abs(s.st_ctime_ns / 1e6 - float(ctime)) <= tol and ino == s.st_ino:
        expected = "up_to_date"
    else:
        expected = "up_to_date" if lines == _terminated(transcript) else "stale"
    assert judge(transcript, cursor, tol=tol)[0] == expected, cursor


# ------------------------------------------------------------------------ two-part (Claude/Codex legacy)


def _legacy(path: Path, *, lines: int | None = None, mtime_shift: float = 0.0) -> str:
    mtime = repr(path.stat().st_mtime_ns / 1e6 + mtime_shift)
    return f"{mtime}:{_terminated(path) if lines is None else lines}"


@pytest.mark.parametrize("source", ["claude", "codex"])
def test_legacy_rule(transcript: Path, source: str) -> None:
    n = _terminated(transcript)
    assert judge(transcript, _legacy(transcript), source=source) == ("up_to_date", 1)  # the lines decide
    assert judge(transcript, _legacy(transcript, lines=n + 1), source=source) == ("stale", 1)
    assert judge(transcript, _legacy(transcript, mtime_shift=-5_000.0), source=source) == ("stale", 0)
    assert judge(transcript, _legacy(transcript, mtime_shift=-0.5), source=source) == ("up_to_date", 1)
    assert judge(transcript, _legacy(transcript, mtime_shift=5_000.0), source=source) == ("up_to_date", 1)


def test_legacy_rule_counts_an_unterminated_tail_either_way(transcript: Path) -> None:
    with transcript.open("a") as fh:
        fh.write('{"type":"user","uuid":"torn"}')  # parseable, no newline yet
    n = _terminated(transcript)
    assert judge(transcript, _legacy(transcript, lines=n))[0] == "up_to_date"
    assert judge(transcript, _legacy(transcript, lines=n + 1))[0] == "up_to_date"
    assert judge(transcript, _legacy(transcript, lines=n + 2))[0] == "stale"


def test_null_cursor_is_rebuilt_from_the_columns(transcript: Path) -> None:
    mtime, n = transcript.stat().st_mtime_ns / 1e6, _terminated(transcript)
    assert judge(transcript, None, mtime=mtime, lines=n) == ("up_to_date", 1)
    assert judge(transcript, None, mtime=mtime, lines=n - 1) == ("stale", 1)
    assert judge(transcript, None) == ("unknown_cursor", 0)


def test_workflow_json_is_judged_by_its_mtime_only(tmp_path: Path) -> None:
    run = tmp_path / "workflows" / "wf-1.json"
    run.parent.mkdir()
    run.write_text(json.dumps({"runId": "wf-1", "script": "lint then test", "workflowProgress": []}))
    cursor = f"{_ms_text(run.stat().st_mtime_ns)}:1"
    assert judge(run, cursor, kind="workflow_json") == ("up_to_date", 0)
    later = run.stat().st_mtime_ns + 2_000_000_000
    os.utime(run, ns=(later, later))
    assert judge(run, cursor, kind="workflow_json") == ("stale", 0)


# ---------------------------------------------------------------------------------------- Codex v4


def _v4(path: Path, *, size_shift: int = 0, lines: int | None = None, state: str | None = None,
        ino: int | None = None) -> str:
    """Obelisk's Codex v4 cursor: its third field an offset (not the size), the size inside the state."""
    s = path.stat()
    blob = state if state is not None else _b64({"sourceSize": s.st_size + size_shift, "bloomA": "A" * 64})
    n = _terminated(path) if lines is None else lines
    inode = s.st_ino if ino is None else ino
    return f"{_ms_text(s.st_mtime_ns)}:{n}:{s.st_size - 7}:{_ms_text(s.st_ctime_ns)}:{inode}:{blob}"


def test_codex_v4_rule(tmp_path: Path) -> None:
    """``sourceSize`` (not the offset field) against the size; a ctime or inode change is settled by the exact
    count of newline-terminated lines (``completeLines``)."""
    rollout = codex_session(tmp_path / "home", tmp_path / "repo", "t1")
    assert judge(rollout, _v4(rollout), source="codex") == ("up_to_date", 0)
    assert judge(rollout, _v4(rollout, size_shift=-1), source="codex") == ("stale", 0)
    assert judge(rollout, _v4(rollout, state="%%%"), source="codex") == ("unknown_cursor", 0)
    cursor = _v4(rollout)
    with rollout.open("a") as fh:
        fh.write('{"type":"event_msg"')  # a torn tail: the size changes
    assert judge(rollout, cursor, source="codex")[0] == "stale"
    n = _terminated(rollout)
    other_inode = rollout.stat().st_ino + 1  # as after a copy or a restore: the same size and mtime
    assert judge(rollout, _v4(rollout, lines=n, ino=other_inode), source="codex") == ("up_to_date", 1)
    assert judge(rollout, _v4(rollout, lines=n + 1, ino=other_inode), source="codex") == ("stale", 1)  # exact


# -------------------------------------------------------------------------------------------- Pi, Kimi


def test_pi_snapshot_rule_and_tombstone(tmp_path: Path) -> None:
    path = pi_session(tmp_path / "home", tmp_path / "repo", "p1")
    cursor = pi_cursor(path)
    assert judge(path, cursor, source="pi") == ("up_to_date", 0)
    copy = path.with_suffix(".copy")
    copy.write_bytes(path.read_bytes())
    os.utime(copy, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns))
    copy.replace(path)  # another inode and ctime: its line field is always 0, so size and mtime decide
    assert judge(path, cursor, source="pi") == ("up_to_date", 0)
    assert judge(path, "0:0", source="pi") == ("stale", 0)  # retracted, yet the file is there
    _append(path, {"type": "message", "id": "late"}, keep_mtime=True)
    assert judge(path, cursor, source="pi") == ("stale", 0)


def test_pi_snapshot_rule_holds_to_its_tolerance_inclusive(tmp_path: Path) -> None:
    """A Pi snapshot's mtime within the tolerance, its edge included, is the same file (the signature rule's
    tolerance); past it the file is stale."""
    path = pi_session(tmp_path / "home", tmp_path / "repo", "p1")
    base = 10**15  # 1970-01-12: nanoseconds below 2**53, so the milliseconds below are exact floats
    os.utime(path, ns=(base, base))
    cursor = pi_cursor(path)
    for shift_ms, expected in ((2, "up_to_date"), (-2, "up_to_date"), (3, "stale")):
        os.utime(path, ns=(base + shift_ms * 10**6, base + shift_ms * 10**6))
        assert judge(path, cursor, source="pi", tol=2.0) == (expected, 0), shift_ms


def test_kimi_aggregate_rule(tmp_path: Path) -> None:
    session = kimi_session(tmp_path / "home", tmp_path / "repo", "k1")
    cursor = kimi_cursor(session)
    assert judge(session, cursor, source="kimi", kind="kimi_dir") == ("up_to_date", 3)
    assert judge(session, "1:2:3:4:5", source="kimi", kind="kimi_dir")[0] == "unknown_cursor"
    wire = session / "agents" / "sub1" / "wire.jsonl"
    _append(wire, {"type": "turn", "n": 9}, keep_mtime=True)
    assert judge(session, cursor, source="kimi", kind="kimi_dir")[0] == "stale"
    later = wire.stat().st_mtime_ns + 3_000_000_000
    os.utime(wire, ns=(later, later))
    assert judge(session, kimi_cursor(session), source="kimi", kind="kimi_dir")[0] == "up_to_date"
    assert judge(session, cursor, source="kimi", kind="kimi_dir") == ("stale", 0)


# ------------------------------------------------------------------------------------------ unreadable


@pytest.mark.parametrize("swap", ["fifo", "directory", "gone"])
def test_a_path_that_is_not_a_regular_file_is_unreadable_whatever_its_cursor(transcript: Path, swap: str) -> None:
    cursors = [signature(transcript), _legacy(transcript), _v4(transcript), pi_cursor(transcript), "0:0", "x"]
    transcript.unlink()
    if swap == "fifo":
        os.mkfifo(transcript)
    elif swap == "directory":
        transcript.mkdir()
    for cursor in cursors:
        assert judge(transcript, cursor) == ("unreadable", 0), cursor


def test_a_remembered_line_count_is_read_again_once_the_file_changed(transcript: Path) -> None:
    memo = TranscriptMemo()
    cursor = _legacy(transcript)
    for expected_reads in (1, 0):
        ctx = Ctx(memo=memo)
        assert judge_unit(ctx, Unit(str(transcript), "claude", "jsonl"), (str(transcript), None, None, cursor)) \
            == "up_to_date"
        assert ctx.lines_counted == expected_reads
    _append(transcript, {"type": "user", "uuid": "late"}, keep_mtime=True)  # same mtime, new size and ctime
    ctx = Ctx(memo=memo)
    assert judge_unit(ctx, Unit(str(transcript), "claude", "jsonl"), (str(transcript), None, None, cursor)) \
        == "stale"
    assert ctx.lines_counted == 1


# ------------------------------------------------------------------------------- markers, roots, known files


_MARKER_PATTERN = re.compile(r"__(.+)_canonical_transcript_v\d+__")
_MARKER_PIECES = ["__", "_canonical_transcript_v", "_canonical_transcript_", "\n", "3", "42", "\u0663", "\u00b2",
                  "codex", "_", "v", ""]


@settings(max_examples=3000, deadline=None)
@given(st.one_of(st.text(max_size=40),
                 st.lists(st.one_of(st.sampled_from(_MARKER_PIECES), st.text(max_size=3)), max_size=8).map("".join)))
def test_marker_source_names_the_source_exactly_where_the_marker_pattern_matches(key: str) -> None:
    """Obelisk's key ``__<source>_canonical_transcript_v<n>__``, as a pattern, is the rule."""
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


def test_known_files_are_normalised_and_an_unindexed_one_is_not_statted(tmp_path: Path) -> None:
    """Known files are taken as ``norm_path`` reads them (a ``Path``, a doubled slash; anything else dropped);
    one the index holds no row for is unindexed without a stat."""
    home = tmp_path / "home"
    home.mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    indexed = claude_session(home, repo, "s1")
    new = claude_session(home, repo, "s2")
    statted: list[str] = []

    def counting(path: str) -> os.stat_result:
        statted.append(path)
        return os.stat(path)

    row = (str(indexed), None, None, signature(indexed))
    known = [(str(indexed).replace("/projects/", "/projects//"), "claude"), (new, "claude"), (None, "claude"),
             ("relative.jsonl", "claude")]
    report = assess_scoped_freshness(
        known, {"__last_build__": 1.0, "__claude_canonical_transcript_v3__": 1.0},  # type: ignore[arg-type]
        lookup=lambda paths: {p: row for p in paths if p == str(indexed)}, has_rows_under=lambda _: False,
        roots=[str(repo)], sources=["claude"], transcript_homes=[home], now_ms=2.0, stat=counting)
    assert (report.verdict, report.up_to_date, report.unindexed_units) == ("incomplete", 1, (str(new),))
    assert str(new) not in statted and str(indexed) in statted
