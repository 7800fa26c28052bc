"""The ``real-obelisk-formats`` evaluation set: the facts the real Obelisk indexer stored, asked as requests.

The database stores absolute paths under ``/tmp/obelisk-formats-home``, so the transcripts and repositories
are extracted there (as its README says) under an exclusive file lock, once: a marker written last records
the tarballs' size and mtime, and a later call with the same tarballs extracts nothing.

Each stored fact becomes one positive situation under its own agent and repository scope (kite-api with its
worktree ``kite-api-wt-retry`` is one repository), asked with realistic terms (the command, error class or
file of the fact: :data:`TERMS`). Its required fact is the fact's session and key phrase. Each agent and
repository scope under which the fact must *not* be found (``must_not_find_under``) becomes a negative
situation: no item there may show the phrase. The three "not stored" facts are negatives under their own
scope. F38 (a fake secret) is a redaction case, not a recall case, and is left out.
"""

from __future__ import annotations

import fcntl
import json
import tarfile
from pathlib import Path
from typing import Any, Final

from obelisk_session_evidence.contract.wire import EvidenceType

from .situation import EvalSet, Fact, ScopeSpec, Situation

# The absolute paths the index stores live there (the corpus README prescribes it).
HOME: Final = Path("/tmp/obelisk-formats-home")  # noqa: S108
LOCK: Final = Path("/tmp/obelisk-formats-home.lock")  # noqa: S108
MARKER: Final = ".extracted.json"
_TARBALLS: Final = ("transcripts.tar.gz", "repos.tar.gz")
_REPO_ROOTS: Final = {"kite-api": (f"{HOME}/src/kite-api", f"{HOME}/src/kite-api-wt-retry"),
                      "lumen-web": (f"{HOME}/src/lumen-web",)}
_SCOPE_NAMES: Final = {("claude", "kite-api"): "source=claude,repo=kite-api(+worktree)",
                       ("codex", "kite-api"): "source=codex,repo=kite-api(+worktree)",
                       ("claude", "lumen-web"): "source=claude,project=lumen-web",
                       ("codex", "lumen-web"): "source=codex,project=lumen-web"}

PF: Final = "prior_failure"
TO: Final = "tool_outcome"
DE: Final = "decision"
FH: Final = "file_history"
SU: Final = "summary"
# fact id -> (accepted evidence types, the first is the one it is reported under; query terms)
TERMS: Final[dict[str, tuple[tuple[EvidenceType, ...], tuple[str, ...]]]] = {
    "F01": ((TO,), ("ruff check",)),
    "F02": ((PF,), ("TokenBucketDrift",)),
    "F03": ((FH,), ("ratelimit.py",)),
    "F04": ((PF,), ("SchemaLockTimeout",)),
    "F05": ((TO,), ("kite_meta",)),
    "F06": ((FH,), ("src/kite/cli.py",)),
    "F07": ((PF, DE), ("スキーマロック",)),
    "F08": ((PF, DE), ("ロックを保持したまま",)),
    "F09": ((PF,), ("npm run lint",)),
    "F10": ((FH,), ("src/lib/retry.ts",)),
    "F11": ((TO,), ("npm run lint",)),
    "F12": ((PF,), ("healthcheck timed out",)),
    "F13": ((FH,), ("ratelimit.py",)),
    "F14": ((FH,), ("tests/conftest.py",)),
    "F15": ((PF,), ("TokenBucketDrift",)),
    "F16": ((SU,), ("TokenBucketDrift",)),
    "F17": ((PF,), ("healthcheck timed out",)),
    "F18": ((PF,), ("docker build",)),
    "F19": ((FH,), ("Dockerfile",)),
    "F20": ((PF,), ("TokenBucketDrift",)),
    "F21": ((PF, DE), ("TokenBucketDrift",)),
    "F22": ((PF, TO), ("pytest tests/test_ratelimit.py",)),
    "F23": ((TO, PF), ("KITE_WALLCLOCK_READ",)),
    "F24": ((TO, PF), ("KITE_WALLCLOCK_READ",)),
    "F25": ((FH,), ("ratelimit.py",)),
    "F26": ((PF,), ("npm publish",)),
    "F27": ((PF, DE), ("write:packages",)),
    "F28": ((PF, TO), ("npm publish",)),
    "F29": ((FH,), ("CHANGELOG.md",)),
    "F30": ((PF, DE), ("令牌权限",)),
    "F31": ((PF, DE), ("缺少写入权限",)),
    "F32": ((FH,), ("retry_budget.ipynb",)),
    "F33": ((FH,), ("retry_budget.py",)),
    "F34": ((PF,), ("RetryBudget",)),
    "F35": ((SU, DE), ("RetryBudget",)),
    "F36": ((PF, DE), ("重试预算",)),
    "F37": ((PF, DE), ("提前清零",)),
    "F39": ((PF,), ("RetryBudgetStarvation",)),
    "F40": ((FH,), ("retry_budget.py",)),
    "F41": ((PF,), ("LumenCardProps",)),
    "F42": ((FH,), ("src/pages/index.tsx",)),
    "F43": ((PF, DE), ("デプロイ前チェック",)),
    "F44": ((PF, DE), ("必須になった",)),
    "F45": ((DE, PF), ("quarantine list",)),
    "F46": ((DE, PF), ("quarantine list",)),
    "F47": ((TO,), ("git tag",)),
    "F48": ((PF,), ("gh release create",)),
    "F49": ((PF, DE), ("contents:write",)),
    "F50": ((PF, TO), ("gh release create",)),
    "F51": ((PF,), ("gh pr create",)),
    "F52": ((PF, DE), ("pull_requests:write",)),
    "F53": ((PF, TO), ("gh pr create",)),
    "F54": ((PF,), ("docker build",)),
    "F55": ((DE, PF, SU), ("reviewer subagent",)),
    "F56": ((TO, PF), ("withRetry",)),
    "N01": ((SU,), ("kestrel-legacy-summary-line",)),
    "N02": ((DE,), ("osprey-developer-note-9",)),
    "N03": ((SU,), ("heron-checkpoint-41",)),
}
SKIPPED: Final = {"F38": "a fake secret: a redaction case, checked by the privacy tests, not recall"}


def _stamp(data: Path) -> dict[str, list[int]]:
    return {name: [(data / name).stat().st_size, (data / name).stat().st_mtime_ns] for name in _TARBALLS}


def materialize(data: Path) -> Path:
    """Extract the corpus under :data:`HOME` once (exclusive file lock, marker written last)."""
    wanted = _stamp(data)
    with open(LOCK, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            try:
                current = json.loads((HOME / MARKER).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                current = None
            if current != wanted:
                HOME.mkdir(parents=True, exist_ok=True)
                (HOME / MARKER).unlink(missing_ok=True)
                for name in _TARBALLS:
                    with tarfile.open(data / name, "r:gz") as tar:
                        tar.extractall(HOME, filter="tar")  # keeps member mtimes (cursors stay fresh)
                (HOME / MARKER).write_text(json.dumps(wanted), encoding="utf-8")
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    return HOME


def _repository(fact: dict[str, Any]) -> str:
    return "kite-api" if fact["repository"].startswith("kite-api") else str(fact["repository"])


def _situations(facts: list[dict[str, Any]]) -> list[Situation]:
    out: list[Situation] = []
    for fact in facts:
        fid = str(fact["id"])
        if fid in SKIPPED:
            continue
        types, terms = TERMS[fid]
        source, repo = str(fact["agent"]), _repository(fact)
        if fact["kind"] == "not_stored":
            out.append(Situation(f"{fid}-not-stored", source, repo, types, terms, negative=True,
                                 forbidden_phrase=fact["phrase"], classes=("not_stored",)))
            continue
        required = Fact(str(fact["session_id"]), types, str(fact["phrase"]), str(fact["kind"]))
        out.append(Situation(fid, source, repo, types, terms, facts=(required,), classes=(str(fact["format"]),)))
        must_not = set(fact["must_not_find_under"])
        for (other_source, other_repo), scope_name in _SCOPE_NAMES.items():
            if (other_source, other_repo) != (source, repo) and scope_name in must_not:
                out.append(Situation(f"{fid}-not-{other_source}-{other_repo}", other_source, other_repo, types,
                                     terms, negative=True, forbidden_phrase=str(fact["phrase"]),
                                     classes=("negative",)))
    return out


def formats_evalset(data: Path) -> EvalSet:
    """The evaluation set of ``shared/real-obelisk-formats`` at ``data`` (extracted under :data:`HOME`)."""
    materialize(data)
    truth = json.loads((data / "facts.json").read_text(encoding="utf-8"))
    sessions: dict[str, tuple[str, str]] = {}
    for s in truth["sessions"]:
        repo = "kite-api" if str(s["repository"]).startswith("kite-api") else str(s["repository"])
        sessions[str(s["db_session_id"])] = (str(s["source"]), repo)
    scopes = [ScopeSpec(source, repo, _REPO_ROOTS[repo]) for source, repo in _SCOPE_NAMES]
    return EvalSet("real-obelisk-formats", data / "formats.sqlite", scopes, sessions, _situations(truth["facts"]))
