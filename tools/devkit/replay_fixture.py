"""A replay fixture: Claude Code sessions in the evaluation corpus's style (its :class:`CorpusBuilder` and
transcript writers) in which failures, commands and edited files recur across sessions, plus matched negatives.

Each of ``families`` signature families is met in an earlier session (a failing test command naming its
error class, an edit of its module) and again, ``gap`` days later, in a later session: three repeat pairs
(failure, command, edit). Each of ``negatives`` fresh families is met once, in a later session, and its
command also runs in a Codex session of the same repository and a Claude session of another repository
(other scopes hold it; this one never did before). Names hold letters only, so masking numbers keeps them
apart. Test and demo code: the read path never imports it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from .corpus.model import REPOS, START_MS, CorpusBuilder
from .home_db import write_home_db

_A: Final = ("berth", "tariff", "manifest", "customs", "pilot", "tug", "crane", "quay", "ballast", "hull",
             "anchor", "cargo", "dock", "ferry", "harbour")
_B: Final = ("loader", "parser", "ledger", "router", "window", "quota", "signal", "gauge", "beacon", "rota")
_ERRORS: Final = ("Timeout", "Overlap", "Schema", "Quota", "Checksum", "Permission", "Encoding")


@dataclass(frozen=True)
class ReplayFixture:
    db_path: Path
    home: Path
    roots: tuple[str, ...]  # the harbor-api scope's roots (repository and worktree)
    families: int
    negatives: int


def _names() -> list[str]:
    return [f"{a}_{b}" for a, b in itertools.product(_A, _B)]


def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


def build_replay_fixture(out_dir: Path, *, families: int = 70, negatives: int = 30, seed: int = 5) -> ReplayFixture:
    names = _names()
    if families + negatives > len(names):
        raise ValueError("not that many distinct families")
    home = out_dir / "home"
    b = CorpusBuilder(home, seed)
    opening = b.claude("r-opening", "harbor-api", 0)
    opening.user("Set up the development environment and run the linters.")
    opening.bash("ruff check src", "Lint", "All checks passed!")
    opening.turn_duration()
    b.finish_claude(opening, "harbor-api")
    for i, name in enumerate(names[:families]):
        error = f"harbor.{name}.{_camel(name)}{_ERRORS[i % len(_ERRORS)]}Error"
        command = f"pytest tests/test_{name}.py -q"
        day = 1 + (i * 3) % 90
        gap = (1, 2, 5, 9, 16, 24, 40)[i % 7]
        for which, when in (("a", day), ("b", day + gap)):
            t = b.claude(f"r-{name}-{which}", "harbor-api", when)
            t.user(f"The {name.replace('_', ' ')} tests fail again. Please look.")
            t.bash(command, "Run tests", f"F.\n{error}: check failed for case {i}\n1 failed, 1 passed in 0.3{i}s",
                   exit_code=1)
            t.edit(t.cwd / f"src/harbor/{name}.py", "limit = 3", "limit = 4")
            t.say(f"{error} comes from the limit in src/harbor/{name}.py; raised it.")
            t.turn_duration()
            b.finish_claude(t, "harbor-api")
    for j, name in enumerate(names[families:families + negatives]):
        error = f"harbor.{name}.{_camel(name)}Error"
        command = f"pytest tests/test_{name}.py -q"
        day = 2 + (j * 5) % 120
        t = b.claude(f"n-{name}", "harbor-api", day + 1)
        t.user(f"New failure in the {name.replace('_', ' ')} tests.")
        t.bash(command, "Run tests", f"F\n{error}: bad input\n1 failed in 0.2s", exit_code=1)
        t.say(f"{error}: the input was malformed.")
        t.turn_duration()
        b.finish_claude(t, "harbor-api")
        x = b.codex(f"n-{name}-codex", "harbor-api", day)
        x.user("Run the tests.")
        x.shell(command, f"F\n{error}: bad input\n", exit_code=1)
        b.finish_codex(x, "harbor-api", None)
        o = b.claude(f"n-{name}-other", "prism-web", day)
        o.user("Run the tests.")
        o.bash(command, "Run tests", f"{error}: bad input", exit_code=1)
        o.turn_duration()
        b.finish_claude(o, "prism-web")
    for key in REPOS:
        b.dirs[key].mkdir(parents=True, exist_ok=True)
    db = out_dir / "obelisk.sqlite"
    write_home_db(db, home, b.units, codex_index=b.codex_index, now_ms=START_MS + 400 * 86_400_000)
    roots = tuple(str(b.dirs[k]) for k in ("harbor-api", "harbor-api-wt"))
    return ReplayFixture(db, home, roots, families, negatives)
