"""The replay qualification: mine, replay, measure, and the JSON and Markdown reports (counts, rates, sizes
and digests only: no command, path, term or snippet of the scope's history)."""

from __future__ import annotations

import errno
import importlib
import io
import json
import os
import re
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ...._version import PROVIDER_VERSION
from ....admission.config import ProviderConfig, load_config
from ....digest import DigestKey, content_digest, load_key, scope_basis
from ....errors import UnsafeWriteTarget
from ....inputs import read_fd
from ....outputs import write_file_in
from .document import REPLAY_FORMAT
from .metrics import MIN_PAIRS, criteria, metrics, verdict
from .mine import mine, read_history
from .run import ScopeRef, replay_all


def scope_digest(scope: ScopeRef, key: DigestKey) -> str:
    """The keyed digest a report is issued for: the receipts' scope digest (agent, project, repository,
    sources, bound roots), which ``enable --stage 2`` recomputes with the same install's key."""
    return key.of(scope_basis(scope.agent_id, scope.project_id, scope.repository_id, scope.sources, scope.roots))


def staged_config(config: ProviderConfig, scope: ScopeRef) -> ProviderConfig:
    """The operator's config with only ``scope`` enabled, at stage 2 (the stage whose triggers the replay asks
    as), in memory; deadline, recency and ceilings are the operator's."""
    mine_ = [s for s in config.scopes if (s.agent_id, s.project_id, s.repository_id) ==
             (scope.agent_id, scope.project_id, scope.repository_id)]
    if not mine_:
        raise ValueError("the scope is not enabled in the config")
    return config._replace(scopes=(mine_[0]._replace(stage=2),))


def scope_of(config_path: Path, agent_id: str, project_id: str, repository_id: str) -> ScopeRef:
    """The enabled scope of the config, as the replay sees it (sources and roots from the config)."""
    for s in load_config(config_path, must_exist=True).scopes:
        if (s.agent_id, s.project_id, s.repository_id) == (agent_id, project_id, repository_id):
            return ScopeRef(s.agent_id, s.project_id, s.repository_id, tuple(s.sources), tuple(s.roots),
                            tuple(s.real_roots))
    raise ValueError("the scope is not enabled in the config")


def run_replay(db_path: Path, config_path: Path, scope: ScopeRef) -> dict[str, Any]:
    """The replay report of ``scope`` on the index at ``db_path`` (read-only; the index is never written, and
    the run writes nothing: the staged config and the install's key stay in memory).

    Raises ``ConfigInvalid`` when the install has no digest key (no scope was ever enabled) and ``ValueError``
    when ``scope`` is not enabled in the config."""
    config = load_config(config_path, must_exist=True)
    key = load_key(config_path)
    staged = staged_config(config, scope)
    history = read_history(db_path, sources=scope.sources, roots=scope.bound_roots())
    pairs, negatives = mine(history)
    replays = replay_all(db_path, (staged, key), scope, frozenset(history.sessions), pairs=pairs,
                         negatives=negatives)
    m = metrics(replays)
    crits = criteria(m, float(config.deadline_ms))
    starts = sorted([p.later_start for p in pairs] + [n.session_start for n in negatives])
    result = verdict(crits, len(pairs))
    revisions = sorted({r.index_revision for r in replays if r.index_revision})
    return {
        "format": REPLAY_FORMAT, "kind": "replay", "verdict": result, "passed": result == "passed",
        "generated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "scope": {"agent_id": scope.agent_id, "project_id": scope.project_id,
                  "repository_id": scope.repository_id},
        "sources": list(scope.sources), "scope_digest": scope_digest(scope, key),
        "index_revision_digest": key.of(revisions),
        "provider_version": PROVIDER_VERSION,
        "replayed": {"from": starts[0][:10] if starts else None, "to": starts[-1][:10] if starts else None,
                     "sessions_in_scope": len(history.sessions), "tool_calls_read": history.rows_read,
                     "pairs": len(pairs), "negatives": len(negatives), "min_pairs": MIN_PAIRS},
        "metrics": m, "criteria": crits,
    }


def _heading(doc: dict[str, Any], cid: str, title: str) -> list[str]:
    """A criterion's section heading: its title, threshold and status."""
    crit = next(c for c in doc["criteria"] if c["id"] == cid)
    return ["", f"## {title}", "", f"Criterion `{cid}`: {crit['threshold']}: **{crit['status']}**", ""]


def _history_section(doc: dict[str, Any]) -> list[str]:
    r, rec = doc["replayed"], doc["metrics"]["recognition"]
    lines = _heading(doc, "history_size", "History replayed")
    lines += ["| sessions in scope | tool calls read | repeat pairs | matched negatives | minimum pairs | from | to |",
              "|---|---|---|---|---|---|---|",
              f"| {r['sessions_in_scope']} | {r['tool_calls_read']} | {r['pairs']} | {r['negatives']} | "
              f"{r['min_pairs']} | {r['from']} | {r['to']} |", "", "| kind | repeat pairs |", "|---|---|"]
    return lines + [f"| {kind} | {row['pairs']} |" for kind, row in rec["by_kind"].items()]


def _recognition_section(doc: dict[str, Any], chart: str | None) -> list[str]:
    m = doc["metrics"]
    rec = m["recognition"]
    lines = _heading(doc, "recognition", "Recognition")
    lines += ["| kind | pairs | recognised | rate |", "|---|---|---|---|"]
    lines += [f"| {kind} | {row['pairs']} | {row['recognised']} | {row['rate']} |"
              for kind, row in rec["by_kind"].items()]
    lines += [f"| all | {rec['pairs']} | {rec['recognised']} | {rec['rate']} |",
              "", "### Recognition against days between the attempts", ""]
    if chart:
        lines += [f"![recognition by days]({chart})", ""]
    lines += ["| days between | pairs | recognised | rate |", "|---|---|---|---|"]
    return lines + [f"| {b['days']} | {b['pairs']} | {b['recognised']} | {b['rate']} |"
                    for b in m["recognition_by_days"]]


def _false_match_section(doc: dict[str, Any]) -> list[str]:
    fm = doc["metrics"]["false_matches"]
    return [*_heading(doc, "no_false_match_on_negatives", "False matches on matched negatives"),
            "| negatives | false matches | rate |", "|---|---|---|",
            f"| {fm['negatives']} | {fm['false_matches']} | {fm['rate']} |"]


def _context_section(doc: dict[str, Any]) -> list[str]:
    ctx = doc["metrics"]["context"]
    lines = [*_heading(doc, "bounded_context", "Characters per answer (every replay, pairs and negatives)"),
             "| arm | median | p95 | max |", "|---|---|---|---|"]
    for name, key in (("provider evidence", "provider_evidence_chars"),
                      ("provider result JSON", "provider_result_json_chars"),
                      ("Obelisk-style ceiling (same cut)", "native_ceiling_chars")):
        d = ctx[key]
        lines.append(f"| {name} | {d['median']} | {d['p95']} | {d['max']} |")
    return [*lines, "", f"Ceiling / provider (median, answers with items): {ctx['ceiling_over_provider_median']}; "
            f"answers over max_total_chars: {ctx['answers_over_budget']}"]


def _latency_section(doc: dict[str, Any]) -> list[str]:
    lat = doc["metrics"]["latency"]
    lines = [*_heading(doc, "bounded_latency", "Latency (in process)"),
             "| median ms | p95 ms | not ok |", "|---|---|---|",
             f"| {lat['in_process_ms']['median']} | {lat['in_process_ms']['p95']} | {lat['timeouts']} |", "",
             "The 5 slowest replays, by their keyed digest:", "", "| digest | ms |", "|---|---|"]
    return lines + [f"| `{x['digest']}` | {x['ms']} |" for x in lat["slowest"]]


def _scope_section(doc: dict[str, Any]) -> list[str]:
    sc = doc["metrics"]["scope"]
    return [*_heading(doc, "scope", "Scope, checked row by row"),
            "| items checked | outside scope or at/after the cut |", "|---|---|",
            f"| {sc['items_checked']} | {sc['items_outside_scope_or_cut']} |"]


def render_markdown(doc: dict[str, Any], chart: str | None = None) -> str:
    """The report for a person: the verdict, then a small table per criterion (counts, rates, sizes and keyed
    digests only); ``chart`` is the bar chart's file name when one was drawn, else its table stands alone."""
    s = doc["scope"]
    lines = [f"# Replay qualification: {s['agent_id']} @ {s['project_id']}/{s['repository_id']}", "",
             f"Verdict: **{doc['verdict']}** (provider {doc['provider_version']}, scope {doc['scope_digest']}, "
             f"index {doc['index_revision_digest']}, replayed {doc['replayed']['from']} to "
             f"{doc['replayed']['to']}, generated {doc['generated_at']})", "",
             "| criterion | threshold | measured | status |", "|---|---|---|---|"]
    lines += [f"| {c['id']} | {c['threshold']} | `{json.dumps(c['measured'])}` | {c['status']} |"
              for c in doc["criteria"]]
    lines += _history_section(doc) + _recognition_section(doc, chart) + _false_match_section(doc)
    lines += _context_section(doc) + _latency_section(doc) + _scope_section(doc)
    lines += ["", "## Freshness verdicts seen", "", "| verdict | answers |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in doc["metrics"]["freshness"].items()]
    return "\n".join([*lines, ""])


def chart_png(doc: dict[str, Any]) -> bytes | None:
    """A bar chart of recognition against days between the attempts, as PNG bytes (the ``[report]`` extra);
    None without matplotlib, and the Markdown keeps its table."""
    try:
        matplotlib: Any = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        plt: Any = importlib.import_module("matplotlib.pyplot")
    except ImportError:
        return None
    buckets = doc["metrics"]["recognition_by_days"]
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.bar([b["days"] for b in buckets], [b["rate"] or 0.0 for b in buckets], color="#4c72b0")
    for i, b in enumerate(buckets):
        ax.text(i, (b["rate"] or 0.0) + 0.02, f"n={b['pairs']}", ha="center", fontsize=8)
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("recognition")
    ax.set_xlabel("days between the attempts")
    fig.tight_layout()
    image = io.BytesIO()
    fig.savefig(image, format="png", dpi=100)
    plt.close(fig)
    return image.getvalue()


#: An id is kept as it is in a report's file name when it is made of these characters (a plain id).
_PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
#: What an id that is not plain keeps: these characters, every other one written as ``_``, the first 48.
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
#: Where report files are written, as errors name it (never by its path).
_ROLE = "a report file in --out"
#: A previous report is read up to this size to learn whose it is.
_MAX_REPORT_READ = 4 * 1024 * 1024


def _scope_tag(scope: dict[str, Any]) -> str:
    """A short, stable tag of the scope's three ids (unkeyed: the ids are the operator's own, not private)."""
    return content_digest([scope["agent_id"], scope["project_id"], scope["repository_id"]])[7:17]


def _stem(scope: dict[str, Any]) -> tuple[str, bool]:
    """``replay-<agent>-<repository>`` and whether it is exact: each id as it is when it is plain, else its safe
    characters (``org/api`` -> ``org_api``) and the scope's tag after them, so two ids that read alike never
    share a name and no id can climb out of the folder (``x/../../escape`` -> ``x_.._.._escape-<tag>``)."""
    agent, repo = scope["agent_id"], scope["repository_id"]
    if _PLAIN_ID.fullmatch(agent) and _PLAIN_ID.fullmatch(repo):
        return f"replay-{agent}-{repo}", True
    return f"replay-{_UNSAFE.sub('_', agent)[:48]}-{_UNSAFE.sub('_', repo)[:48]}-{_scope_tag(scope)}", False


def _owner(path: Path) -> Any:
    """The ``scope`` of the replay report at ``path``: None when there is none; a link or a non-regular file
    there is :class:`UnsafeWriteTarget`; a file that is not a replay report gives ``{}`` (someone else's)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeWriteTarget(f"{_ROLE} is a symbolic link or not a regular file: refused; remove it") from None
        return {}
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafeWriteTarget(f"{_ROLE} is a symbolic link or not a regular file: refused; remove it")
        raw = read_fd(fd, _MAX_REPORT_READ)
    finally:
        os.close(fd)
    try:
        previous = json.loads(raw)
    except (ValueError, RecursionError):
        return {}
    return previous.get("scope", {}) if isinstance(previous, dict) and previous.get("kind") == "replay" else {}


def report_stem(doc: dict[str, Any], out_dir: Path) -> str:
    """The file name stem of ``doc``'s reports in ``out_dir``: :func:`_stem`, and when a report of another scope
    (another project, or ids that read alike) already holds that name, the tagged name beside it."""
    scope = doc["scope"]
    stem, exact = _stem(scope)
    owner = _owner(out_dir / f"{stem}.json")
    if owner is not None and owner != scope and exact:
        stem = f"{stem}-{_scope_tag(scope)}"
        owner = _owner(out_dir / f"{stem}.json")
    if owner is not None and owner != scope:
        raise UnsafeWriteTarget(f"{_ROLE} of another scope holds this scope's report name: refused; move it")
    return stem


def write_replay_reports(doc: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    """Write ``<stem>.json``, ``<stem>.md`` and, with matplotlib, ``<stem>-recognition.png`` into ``out_dir``
    (created when missing); each atomically and never through a link (``provider/outputs.py``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = report_stem(doc, out_dir)
    json_path = write_file_in(out_dir, f"{stem}.json",
                              (json.dumps(doc, indent=1, ensure_ascii=False) + "\n").encode("utf-8"), role=_ROLE)
    chart = chart_png(doc)
    chart_name = f"{stem}-recognition.png"
    if chart is not None:
        write_file_in(out_dir, chart_name, chart, role=_ROLE)
    md_path = write_file_in(out_dir, f"{stem}.md",
                            render_markdown(doc, chart_name if chart is not None else None).encode("utf-8"),
                            role=_ROLE)
    return json_path, md_path
