"""Freshness over transcripts anything the user runs can swap or restore (issue 30 items 1-3, issue 36).

A real Obelisk home (Claude Code and Codex transcripts written as the tools write them, the index built from
them, the last build after the files, by the real clock) is attacked on disk, then asked through the CLI or the
service's ``answer``:

* an indexed transcript replaced by a FIFO or a link to ``/dev/zero`` or ``/dev/urandom`` (and a FIFO as the
  parent a workflow run inherits its cwd from): a typed answer, freshness ``unknown`` (``unreadable_file``),
  never a hung process; the subprocess timeout is only a hang detector;
* a rollout restored with ``tar x`` or ``rsync -a`` (mtimes set back) into an old Codex day, month or year
  directory, into an old day directory holding only another repository's rollouts (its month and year
  untouched), or into a Claude project directory: ``incomplete``, never ``fresh``;
* a scope that matches no session: ``unknown`` with ``unknown_reason_no_transcript_in_scope``;
* issue 36: the candidate walks (a Claude project directory holding no known transcript, Kimi and Pi, Codex
  ``archived_sessions/``) and the Codex signature checks, each against the mutant it kills (named per test).
"""

from __future__ import annotations

import calendar
import json
import os
import random
import shutil
import sqlite3
import subprocess
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from obelisk_session_evidence.errors import DeadlineExceeded
from obelisk_session_evidence.fixtures.cursors import cursor_for
from obelisk_session_evidence.fixtures.encoding import uuid4
from obelisk_session_evidence.fixtures.transcripts import ClaudeTranscript, CodexTranscript
from obelisk_session_evidence.index.connection import Deadline, ReadSnapshot, read_index
from obelisk_session_evidence.index.freshness import FreshnessReport, assess_scoped_freshness
from obelisk_session_evidence.index.scope_state import has_rows_under, read_marker_rows, read_scope_set, read_unit_rows
from obelisk_session_evidence.inputs import NotRegularFile, regular_file_chunks
from obelisk_session_evidence.paths import Roots
from obelisk_session_evidence.service import answer
from obelisk_session_evidence.templates.catalog import scope_template

from tests.conftest import CLI, REPO, make_request, run_cli, scope_entry, write_config
from tests.integration.test_freshness import kimi_cursor, kimi_session, pi_cursor, pi_session
from tools.devkit.home_db import write_home_db

LIMITS = {"max_sessions": 5, "max_items": 8, "max_snippet_chars": 600, "max_total_chars": 6000}
AGENTS = {"claude": "claude-main", "codex": "codex-main", "mixed": "mixed-main"}
#: Hang detector only: a request that answers at all answers in well under a second.
HANG_S = 60


def _ms(year: int, month: int, day: int, hour: int = 10) -> int:
    return calendar.timegm((year, month, day, hour, 0, 0)) * 1000


# ------------------------------------------------------------------------------------------- the world


@dataclass
class World:
    """One repository ``web``; a Claude Code session and a Codex session recorded on 2025-03-07, indexed."""

    tmp: Path
    home: Path
    repo: Path
    db: Path
    config: Path
    claude: Path  # the Claude Code transcript
    codex: Path  # the Codex rollout
    rng: random.Random
    last_build_ms: float

    def request(self, agent: str, request_id: str = "req-1") -> bytes:
        return json.dumps(make_request(
            request_id=request_id,
            scope={"agent_id": AGENTS[agent], "project_id": "demo", "repository_id": "web",
                   "allow_cross_agent": False, "allow_cross_project": False},
            evidence_types=["prior_failure"], query_terms=["ModuleNotFoundError"], limits=LIMITS)).encode()

    def ask(self, agent: str) -> dict[str, Any]:
        envelope: dict[str, Any] = answer(self.request(agent), db_path=self.db, config_path=self.config).envelope
        assert envelope["outcome"] == "ok", envelope["error"]
        return envelope

    def freshness(self, agent: str) -> tuple[str, dict[str, int]]:
        envelope = self.ask(agent)
        assert envelope["receipt"]["freshness"] == envelope["result"]["freshness"]
        return envelope["result"]["freshness"], envelope["provider_meta"]["freshness_detail"]

    def set_cursor(self, path: Path, cursor: str) -> None:
        con = sqlite3.connect(self.db)
        with con:
            con.execute("UPDATE index_state SET cursor = ?, mtime = ? WHERE jsonl_path = ?",
                        (cursor, float(cursor.split(":", 1)[0]), str(path)))
        con.close()

    def add_rows(self, rows: list[tuple[str, float, int, str | None]]) -> None:
        con = sqlite3.connect(self.db)
        with con:
            con.executemany("INSERT INTO index_state (jsonl_path, mtime, lines_processed, cursor) VALUES (?,?,?,?)",
                            rows)
        con.close()

    def codex_rollout(self, start_ms: int, *, home: Path | None = None, cwd: Path | None = None) -> Path:
        """A Codex rollout of a session in ``web`` (or ``cwd``) written under ``home``, its mtime as Codex left it."""
        x = CodexTranscript(rng=self.rng, home=home or self.home, thread_id=uuid4(self.rng), cwd=cwd or self.repo,
                            branch="main", start_ms=start_ms)
        _codex_story(x)
        unit = x.to_unit()
        unit.path.parent.mkdir(parents=True, exist_ok=True)
        unit.path.write_bytes(unit.data)
        os.utime(unit.path, ns=(unit.mtime_ns, unit.mtime_ns))
        return unit.path

    def claude_session(self, start_ms: int, *, home: Path | None = None, cwd: Path | None = None) -> Path:
        t = ClaudeTranscript(rng=self.rng, home=home or self.home, session_id=uuid4(self.rng), cwd=cwd or self.repo,
                             branch="main", start_ms=start_ms)
        _claude_story(t)
        unit = t.to_unit()
        unit.path.parent.mkdir(parents=True, exist_ok=True)
        unit.path.write_bytes(unit.data)
        os.utime(unit.path, ns=(unit.mtime_ns, unit.mtime_ns))
        return unit.path


def _claude_story(t: ClaudeTranscript) -> None:
    t.user("Run the tests.")
    t.bash("pytest -q tests/test_auth.py", "Run the auth tests",
           "E   ModuleNotFoundError: No module named 'jwt'\n1 failed in 0.31s", exit_code=1)
    t.say("The jwt package is missing; I will add PyJWT to the dev requirements.")


def _codex_story(x: CodexTranscript) -> None:
    x.env_context()
    x.turn_context()
    x.user("Run the tests.")
    x.shell(["pytest", "-q"], "E   ModuleNotFoundError: No module named 'jwt'\n1 failed in 0.4s", exit_code=1)
    x.say("PyJWT is missing from the dev requirements.")
    x.token_count()


def _world(top: Path, *, sources_mixed: tuple[str, ...] = ()) -> World:
    tmp = top / "world"  # (beside the ``isolated_env`` HOME a CLI test runs with)
    home = tmp / "home"
    repo = home / "src" / "web"
    repo.mkdir(parents=True)
    rng = random.Random("trust")
    start = _ms(2025, 3, 7)
    t = ClaudeTranscript(rng=rng, home=home, session_id=uuid4(rng), cwd=repo, branch="main", start_ms=start)
    _claude_story(t)
    t.rows.insert(0, ("sessions", t.session_row()))
    x = CodexTranscript(rng=rng, home=home, thread_id=uuid4(rng), cwd=repo, branch="main", start_ms=start + 3_600_000)
    _codex_story(x)
    x.rows.insert(0, ("sessions", x.session_row(None)))
    db = tmp / "obelisk.sqlite"
    write_home_db(db, home, [t.to_unit(), x.to_unit()], now_ms=x.clock + 60_000)
    # The build ran after the files were written, by the real clock: every directory predates it (its mtime
    # and its ctime). Then the clock moves on past the filesystem's coarse timestamp tick.
    built = time.time() * 1000
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE index_state SET mtime = ? WHERE jsonl_path LIKE '\\_\\_%' ESCAPE '\\'", (built,))
    con.close()
    time.sleep(0.05)
    scopes = [scope_entry(AGENTS["claude"], "demo", "web", ["claude"], [str(repo)]),
              scope_entry(AGENTS["codex"], "demo", "web", ["codex"], [str(repo)])]
    if sources_mixed:
        scopes.append(scope_entry(AGENTS["mixed"], "demo", "web", list(sources_mixed), [str(repo)]))
    config = write_config(tmp / "config.json", scopes, transcript_homes=[str(home)])
    return World(tmp=tmp, home=home, repo=repo, db=db, config=config, claude=t.path, codex=x.path, rng=rng,
                 last_build_ms=built)


@pytest.fixture
def world(tmp_path: Path) -> World:
    w = _world(tmp_path)
    assert w.freshness("claude")[0] == "fresh"
    assert w.freshness("codex")[0] == "fresh"
    return w


# ------------------------------------------------------- item 1: FIFOs and devices in place of transcripts


def _swap(world: World, kind: str) -> None:
    """The Codex rollout, indexed with a legacy ``mtime:lines`` cursor (older Obelisk), written to just now (so a
    device's mtime is not newer), then replaced by ``kind``: a FIFO with the rollout's mtime, or a link."""
    path = world.codex
    now = time.time_ns()
    os.utime(path, ns=(now, now))
    world.set_cursor(path, cursor_for(path, "codex", "legacy"))
    assert world.freshness("codex")[0] == "fresh"
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
        os.utime(path, ns=(now, now))
    else:
        path.symlink_to(kind)


def _assert_unreadable(envelope: dict[str, Any]) -> None:
    assert envelope["outcome"] == "ok"
    assert envelope["result"]["freshness"] == envelope["receipt"]["freshness"] == "unknown"
    detail = envelope["provider_meta"]["freshness_detail"]
    assert detail["unreadable_units"] == 1 and detail["unknown_reason_unreadable_file"] == 1, detail


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "/dev/urandom"])
def test_query_answers_when_an_indexed_transcript_is_a_fifo_or_a_device(world: World, kind: str,
                                                                         isolated_env: dict[str, str]) -> None:
    """main: ``query`` never answered (blocked opening the FIFO, or counted the lines of an endless device)."""
    _swap(world, kind)
    result = run_cli("query", "--db", str(world.db), "--config", str(world.config), stdin=world.request("codex"),
                     env=isolated_env, timeout=HANG_S)
    assert result.code == 0, result.stderr
    _assert_unreadable(result.document())


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_serve_answers_every_line_when_an_indexed_transcript_is_a_fifo_or_a_device(
        world: World, kind: str, isolated_env: dict[str, str]) -> None:
    """main: the ``serve`` process wedged on its first request and answered nothing."""
    _swap(world, kind)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OBELISK")}, **isolated_env}
    lines = world.request("codex", "req-a") + b"\n" + world.request("codex", "req-b") + b"\n"
    proc = subprocess.run([*CLI, "serve", "--stdio", "--db", str(world.db), "--config", str(world.config)],
                          input=lines, capture_output=True, env=env, cwd=REPO, timeout=HANG_S, check=False)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    envelopes = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert [e["request_id"] for e in envelopes] == ["req-a", "req-b"]
    for envelope in envelopes:
        _assert_unreadable(envelope)


def test_a_fifo_with_a_current_cursor_is_unreadable_not_stale(world: World) -> None:
    """With Obelisk's five-part cursor main said ``stale`` (the FIFO's size 0 differs): the same verdict as every
    other cursor shape now, unreadable (``unknown``), decided from the stat before any read."""
    path = world.codex
    st = path.stat()
    path.unlink()
    os.mkfifo(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    _assert_unreadable(world.ask("codex"))


def test_a_fifo_parent_of_a_workflow_run_is_unreadable_not_a_hang(world: World,
                                                                    isolated_env: dict[str, str]) -> None:
    """A workflow run's ``.json`` inherits its session's cwd from the main transcript beside its directory; a
    session the index does not hold whose main transcript is a FIFO: main blocked reading that head."""
    sid = uuid4(world.rng)
    parent = world.claude.parent / f"{sid}.jsonl"
    os.mkfifo(parent)
    run = world.claude.parent / sid / "workflows" / "wf-run-1.json"
    run.parent.mkdir(parents=True)
    run.write_text(json.dumps({"runId": "wf-run-1", "script": "lint then test", "agents": []}), encoding="utf-8")
    result = run_cli("query", "--db", str(world.db), "--config", str(world.config), stdin=world.request("claude"),
                     env=isolated_env, timeout=HANG_S)
    assert result.code == 0, result.stderr
    envelope = result.document()
    assert envelope["result"]["freshness"] == "unknown"
    detail = envelope["provider_meta"]["freshness_detail"]
    assert detail["unknown_reason_unreadable_file"] == 1 and detail["unattributed_files"] == 1, detail


def test_a_new_transcript_whose_head_cannot_be_read_is_counted_unattributed(world: World,
                                                                           isolated_env: dict[str, str]) -> None:
    """A session the index does not hold whose transcript is listed as a regular file but fails when read (a link
    to ``/proc/self/mem``: a regular file whose read is an I/O error) is counted among the unattributed files, and
    the reason is said; it never ends the request."""
    (world.claude.parent / f"{uuid4(world.rng)}.jsonl").symlink_to("/proc/self/mem")
    result = run_cli("query", "--db", str(world.db), "--config", str(world.config), stdin=world.request("claude"),
                     env=isolated_env, timeout=HANG_S)
    assert result.code == 0, result.stderr
    envelope = result.document()
    assert envelope["result"]["freshness"] == "unknown"
    detail = envelope["provider_meta"]["freshness_detail"]
    assert detail["unknown_reason_unreadable_file"] == 1 and detail["unattributed_files"] == 1, detail


def test_regular_file_chunks_refuses_what_is_not_a_file_and_checks_before_every_chunk(tmp_path: Path) -> None:
    """The one reader of files on disk: a FIFO or a device is refused without blocking, a link refused on demand,
    the cap holds, and the caller's check runs before every chunk (its exception ends the read)."""
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    device = tmp_path / "zero.jsonl"
    device.symlink_to("/dev/zero")
    for path in (fifo, device, tmp_path):
        with pytest.raises(NotRegularFile):
            list(regular_file_chunks(path, 10))
    data = tmp_path / "data.jsonl"
    data.write_bytes(b"0123456789")
    link = tmp_path / "link.jsonl"
    link.symlink_to(data)
    assert b"".join(regular_file_chunks(link, 100)) == b"0123456789"
    with pytest.raises(OSError):
        list(regular_file_chunks(link, 100, follow=False))
    assert list(regular_file_chunks(data, 7, chunk=4)) == [b"0123", b"456"]
    calls: list[int] = []

    def check() -> None:
        calls.append(1)
        if len(calls) == 2:
            raise DeadlineExceeded

    read: list[bytes] = []
    with pytest.raises(DeadlineExceeded), closing(regular_file_chunks(data, 100, chunk=4, check=check)) as chunks:
        read.extend(chunks)
    assert read == [b"0123"]


def test_a_long_line_count_stops_at_the_deadline_between_chunks(tmp_path: Path) -> None:
    """The scope's rollout (3 MiB, a legacy cursor: its lines are counted) is read in 1 MiB chunks, the deadline
    checked before each: a deadline that passes after the first chunk ends the assessment (the service answers
    freshness ``unknown``, ``freshness_deadline_exceeded``). main read the whole file whatever the deadline."""
    w = _world(tmp_path)
    with w.codex.open("ab") as fh:
        for i in range(3 * 1024):
            fh.write(json.dumps({"timestamp": "2025-03-07T11:30:00.000Z", "type": "event_msg",
                                 "payload": {"type": "agent_reasoning", "text": f"step {i} " + "x" * 900}}).encode()
                     + b"\n")
    w.set_cursor(w.codex, cursor_for(w.codex, "codex", "legacy"))
    checks: list[int] = []

    def deadline_check() -> None:
        checks.append(1)
        if len(checks) >= 2:
            raise DeadlineExceeded

    def work(snap: ReadSnapshot) -> FreshnessReport:
        scope = read_scope_set(snap, scope_template(), sources=["codex"], roots=Roots.of([str(w.repo)]), since="")
        return assess_scoped_freshness(
            scope.files, read_marker_rows(snap), lookup=lambda p: read_unit_rows(snap, p, has_cursor=True),
            has_rows_under=lambda p: has_rows_under(snap, p), roots=[str(w.repo)], sources=["codex"],
            transcript_homes=[w.home], now_ms=time.time() * 1000, deadline_check=deadline_check)

    assert w.codex.stat().st_size > 3 * 1024 * 1024
    with pytest.raises(DeadlineExceeded):
        read_index(w.db, work, deadline=Deadline(60_000))
    assert len(checks) == 2


# ------------------------------------------ item 2: restores that set mtimes back (tar, rsync -a)


#: (name, date of the restored rollout): a second rollout in the scope's old day directory; a new day in its
#: month; a new month in its year (the scope's rollout is on 2025-03-07, long before the last build).
RESTORE_DAYS = [("day", (2025, 3, 7)), ("month", (2025, 3, 15)), ("year", (2025, 11, 2))]


def _restore_with_tar(world: World, backup: Path) -> None:
    archive = world.tmp / "backup.tar"
    subprocess.run(["tar", "-cf", str(archive), "-C", str(backup), ".codex"], check=True, timeout=HANG_S)
    subprocess.run(["tar", "-xf", str(archive), "-C", str(world.home)], check=True, timeout=HANG_S)


def _restore_like_rsync(world: World, backup: Path) -> None:
    """``rsync -a``: each file and directory copied, then its mtime set to the backup's (files first)."""
    copied: list[tuple[Path, Path]] = []
    for source in sorted(backup.rglob("*")):
        target = world.home / source.relative_to(backup)
        if source.is_dir():
            target.mkdir(exist_ok=True)
        else:
            shutil.copyfile(source, target)
        copied.append((source, target))
    for source, target in sorted(copied, key=lambda pair: -len(pair[0].parts)):
        st = source.stat()
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))


def _backup_of_a_rollout(world: World, day: tuple[int, int, int]) -> tuple[Path, Path]:
    """A backup tree holding one rollout of a session in scope, every directory's mtime as the backup kept it
    (the home's own where it exists, else the rollout's): (backup top, where the rollout lands in the home)."""
    backup = world.tmp / "backup"
    rollout = world.codex_rollout(_ms(*day), home=backup)
    for directory in [rollout.parent, *rollout.parent.parents]:
        if directory == backup:
            break
        twin = world.home / directory.relative_to(backup)
        mtime = twin.stat().st_mtime_ns if twin.exists() else rollout.stat().st_mtime_ns
        os.utime(directory, ns=(mtime, mtime))
    return backup, world.home / rollout.relative_to(backup)


@pytest.mark.parametrize("restore", [_restore_with_tar, _restore_like_rsync], ids=["tar", "rsync"])
@pytest.mark.parametrize(("where", "day"), RESTORE_DAYS, ids=[name for name, _ in RESTORE_DAYS])
def test_a_rollout_restored_with_old_mtimes_makes_the_scope_incomplete(
        world: World, restore: Callable[[World, Path], None], where: str, day: tuple[int, int, int]) -> None:
    """main said ``fresh``: the old date directories' mtimes (set back by the restore) said nothing was added
    since the last build, so they were visited by name and the restored rollout never seen. Their ctimes say."""
    backup, landed = _backup_of_a_rollout(world, day)
    restore(world, backup)
    assert landed.is_file()
    for path in [landed, *landed.parents[:3]]:  # the rollout, its day, month and year directories
        st = path.stat()
        assert st.st_mtime_ns / 1e6 < world.last_build_ms < st.st_ctime_ns / 1e6  # mtime set back, ctime moved
    verdict, detail = world.freshness("codex")
    assert (verdict, detail["unindexed"]) == ("incomplete", 1), detail


def _build_now(world: World) -> None:
    """A build runs now (its markers say so) and the clock moves on past the filesystem's timestamp tick."""
    built = time.time() * 1000
    con = sqlite3.connect(world.db)
    with con:
        con.execute("UPDATE index_state SET mtime = ? WHERE jsonl_path LIKE '\\_\\_%' ESCAPE '\\'", (built,))
    con.close()
    world.last_build_ms = built
    time.sleep(0.05)


#: (name, date of the old day directory holding only another repository's rollout): in the month of the scope's
#: rollout (2025-03-07), in another month of its year.
OTHER_SCOPES_DAYS = [("same-month", (2025, 3, 5)), ("other-month", (2025, 1, 20))]


@pytest.mark.parametrize("day", [day for _, day in OTHER_SCOPES_DAYS], ids=[name for name, _ in OTHER_SCOPES_DAYS])
def test_a_rollout_restored_into_an_old_day_of_another_scope_makes_the_scope_incomplete(
        world: World, day: tuple[int, int, int]) -> None:
    """An old Codex day directory that existed at the last build and holds only another repository's rollout,
    in a month and a year unchanged since: a rollout of the scope restored into it with ``tar x`` keeps its old
    mtime and sets the day directory's mtime back, and neither the month nor the year changes at all. Only the
    day directory's ctime says. main said ``fresh``: it looked only at the date directories on the way to the
    scope's known rollouts, and never at this day."""
    other = world.codex_rollout(_ms(*day), cwd=world.tmp / "src" / "other")
    world.add_rows([(str(other), other.stat().st_mtime_ns / 1e6, 0, cursor_for(other, "codex"))])
    _build_now(world)  # every directory predates the build: mtime and ctime
    assert world.freshness("codex")[0] == "fresh"
    day_dir = other.parent
    backup = world.tmp / "backup"
    restored = world.codex_rollout(_ms(*day, 15), home=backup)  # the scope's session, that day
    assert restored.parent.name == day_dir.name
    kept = day_dir.stat().st_mtime_ns
    os.utime(restored.parent, ns=(kept, kept))  # the backup's day directory, as the home had it
    archive = world.tmp / "day.tar"
    subprocess.run(["tar", "-cf", str(archive), "-C", str(restored.parent.parent), restored.parent.name],
                   check=True, timeout=HANG_S)
    subprocess.run(["tar", "-xf", str(archive), "-C", str(day_dir.parent)], check=True, timeout=HANG_S)
    landed = day_dir / restored.name
    assert landed.is_file() and landed.stat().st_mtime_ns / 1e6 < world.last_build_ms
    for directory in (day_dir.parent, day_dir.parent.parent):  # the month and the year: untouched
        st = directory.stat()
        assert max(st.st_mtime_ns, st.st_ctime_ns) / 1e6 < world.last_build_ms
    st = day_dir.stat()
    assert st.st_mtime_ns / 1e6 < world.last_build_ms < st.st_ctime_ns / 1e6  # mtime set back, ctime moved
    verdict, detail = world.freshness("codex")
    assert (verdict, detail["unindexed"]) == ("incomplete", 1), detail


def test_a_claude_transcript_restored_with_old_mtimes_makes_the_scope_incomplete(world: World) -> None:
    """The Claude project directories are listed on every request (no mtime shortcut): a session restored into
    the scope's project directory with its mtimes set back is seen (a guard: main saw it too)."""
    project = world.claude.parent
    kept = project.stat().st_mtime_ns
    restored = world.claude_session(_ms(2025, 3, 9))
    os.utime(project, ns=(kept, kept))
    assert restored.parent == project
    verdict, detail = world.freshness("claude")
    assert (verdict, detail["unindexed"]) == ("incomplete", 1), detail


# -------------------------------------------------------- item 3: a scope that matches no session


def test_a_scope_matching_no_session_is_unknown_not_fresh(world: World, isolated_env: dict[str, str]) -> None:
    """main answered ``fresh`` with 0 units: LoopX would read "fresh and empty" as "no history"."""
    elsewhere = world.tmp / "src" / "elsewhere"
    elsewhere.mkdir(parents=True)
    config = write_config(world.tmp / "empty.json",
                          [scope_entry(AGENTS["codex"], "demo", "web", ["codex"], [str(elsewhere)])],
                          transcript_homes=[str(world.home)])
    result = run_cli("query", "--db", str(world.db), "--config", str(config), stdin=world.request("codex"),
                     env=isolated_env, timeout=HANG_S)
    envelope = result.document()
    assert envelope["outcome"] == "ok" and envelope["result"]["items"] == []
    assert envelope["result"]["freshness"] == envelope["receipt"]["freshness"] == "unknown"
    detail = envelope["provider_meta"]["freshness_detail"]
    assert detail["units_in_scope"] == 0 and detail["unknown_reason_no_transcript_in_scope"] == 1, detail
    assert "scope_matches_no_session" in envelope["provider_meta"]["degradations"]


# ------------------------------------------------------------ issue 36: candidates.py, judging.py


def test_a_claude_project_directory_holding_no_known_transcript_is_walked(world: World) -> None:
    """A new session started in a subdirectory of the root has a project directory of its own, holding nothing
    the index knows. Kills ``candidates._claude``: ``name in holding or (...)`` -> ``and`` (fresh)."""
    new = world.claude_session(_ms(2025, 3, 10), cwd=world.repo / "packages" / "api")
    assert new.parent != world.claude.parent
    verdict, detail = world.freshness("claude")
    assert (verdict, detail["unindexed"]) == ("incomplete", 1), detail


def _mixed(tmp_path: Path) -> World:
    w = _world(tmp_path, sources_mixed=("claude", "kimi", "pi"))
    kimi = kimi_session(w.home, w.repo, "k-2025-03-07")
    pi = pi_session(w.home, w.repo, "p-2025-03-07")
    markers: list[tuple[str, float, int, str | None]] = [
        ("__kimi_canonical_transcript_v4__", w.last_build_ms, 0, None),
        ("__pi_canonical_transcript_v9__", w.last_build_ms, 0, None)]
    w.add_rows([(str(kimi), 0.0, 0, kimi_cursor(kimi)), (str(pi), 0.0, 0, pi_cursor(pi)), *markers])
    assert w.freshness("mixed")[0] == "fresh"
    return w


@pytest.mark.parametrize("change", ["kimi-new", "kimi-grown", "pi-new", "pi-grown"])
def test_kimi_and_pi_transcripts_are_collected(tmp_path: Path, change: str) -> None:
    """Kills ``candidates.collect_candidates``: ``units.extend(WALKERS[source](ctx, home))`` removed (fresh)."""
    w = _mixed(tmp_path)
    source, what = change.split("-")
    if what == "new":
        (kimi_session if source == "kimi" else pi_session)(w.home, w.repo, f"{source}-new")
        expected = "incomplete"
    else:
        grown = (next((w.home / ".kimi-code").rglob("wire.jsonl")) if source == "kimi"
                 else next((w.home / ".pi").rglob("*.jsonl")))
        with grown.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"type": "message", "id": "late", "message": {"role": "user", "content": "y"}}) + "\n")
        expected = "stale"
    assert w.freshness("mixed")[0] == expected


def test_a_new_archived_rollout_is_seen(world: World) -> None:
    """The index holds a row under ``archived_sessions/`` (its Obelisk walks archives); a rollout of a session in
    scope archived since the last build is unindexed. Kills ``candidates._codex``: the archive walk's
    ``if has_rows_under(...)`` and its body removed (fresh)."""
    archived = world.home / ".codex" / "archived_sessions"
    older = world.codex_rollout(_ms(2025, 1, 4), cwd=world.tmp / "src" / "other")
    archived.mkdir()
    older = older.rename(archived / older.name)
    world.add_rows([(str(older), older.stat().st_mtime_ns / 1e6, 0, cursor_for(older, "codex"))])
    assert world.freshness("codex")[0] == "fresh"
    today = time.gmtime(world.last_build_ms / 1000)
    recent = world.codex_rollout(_ms(today.tm_year, today.tm_mon, today.tm_mday, 0))
    recent.rename(archived / recent.name)
    verdict, detail = world.freshness("codex")
    assert (verdict, detail["unindexed"]) == ("incomplete", 1), detail


def _rewrite(path: Path, data: bytes, *, mtime_ns: int) -> None:
    """Rewrite ``path`` in place (same inode), then set its mtime."""
    with path.open("r+b") as fh:
        fh.write(data)
        fh.truncate()
    os.utime(path, ns=(mtime_ns, mtime_ns))


def _longer_last_line(data: bytes, extra: int) -> bytes:
    lines = data.split(b"\n")
    record = json.loads(lines[-2])
    record["pad"] = "p" * extra
    lines[-2] = json.dumps(record).encode()
    return b"\n".join(lines)


def _split_last_line(data: bytes) -> bytes:
    """The last record replaced by two records of exactly its length (with the newline): same size, one line more."""
    head, last = data[:-1].rsplit(b"\n", 1)
    first = json.dumps({"timestamp": "2025-03-07T11:59:00.000Z", "type": "event_msg",
                        "payload": {"type": "agent_message", "message": "done"}}).encode()
    stub = {"timestamp": "2025-03-07T11:59:01.000Z", "type": "event_msg",
            "payload": {"type": "agent_message", "message": ""}}
    room = len(last) - len(first) - 1 - len(json.dumps(stub).encode())
    assert room > 0
    stub["payload"]["message"] = "m" * room  # type: ignore[index]
    second = json.dumps(stub).encode()
    assert len(first) + 1 + len(second) == len(last)
    return head + b"\n" + first + b"\n" + second + b"\n"


@pytest.mark.parametrize("cursor_format", ["current", "cooperative"])
@pytest.mark.parametrize("change", ["size-same-mtime", "mtime-same-size", "lines-same-size-and-mtime"])
def test_a_codex_rollout_rewritten_in_place_is_stale(world: World, cursor_format: str, change: str) -> None:
    """Each change keeps the inode and the line count (but the last); the ctime moves, as any write moves it.
    Kills, in ``judging._by_signature`` (both formats):
    ``size`` / ``mtime`` test ``or`` -> ``and`` (the first two changes: fresh); the ctime and inode test
    ``and`` -> ``or`` (the third: up to date without counting: fresh)."""
    path = world.codex
    world.set_cursor(path, cursor_for(path, "codex", cursor_format))  # type: ignore[arg-type]
    assert world.freshness("codex")[0] == "fresh"
    st = path.stat()
    data = path.read_bytes()
    if change == "size-same-mtime":
        _rewrite(path, _longer_last_line(data, 40), mtime_ns=st.st_mtime_ns)
    elif change == "mtime-same-size":
        _rewrite(path, data.replace(b"PyJWT", b"pyjwt", 1), mtime_ns=st.st_mtime_ns + 5_000_000_000)
    else:
        _rewrite(path, _split_last_line(data), mtime_ns=st.st_mtime_ns)
    after = path.stat()
    assert after.st_ino == st.st_ino and after.st_ctime_ns != st.st_ctime_ns
    assert (after.st_size == st.st_size) == (change != "size-same-mtime")
    assert (after.st_mtime_ns == st.st_mtime_ns) == (change != "mtime-same-size")
    verdict, detail = world.freshness("codex")
    assert (verdict, detail["stale"]) == ("stale", 1), detail

