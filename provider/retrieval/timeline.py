"""What came after a piece of evidence in its scope: a decision reversed by a later one, a failure that came back.

* **Superseded decisions.** A decision is superseded by a later decision of the scope that shares a query term
  with it (both are about the same thing) and says it reverses or replaces something (:data:`REVERSALS`:
  "instead", "back to", "after all", "no longer", "drop", "from now on" …). Within one session only a plain
  reversal counts (:data:`SAME_SESSION`: "actually", "scratch that", "after all" …), so the agent restating the
  user's choice in the next message ("OK, I'll use Zod instead of …") reverses nothing. The earlier decision is
  marked with the nearest later one that supersedes it (``Candidate.superseded_by``: its ref and day), and
  ``fold`` places it after that one, so the answer leads with the current decision.
* **Regressions.** A failure recurs when a later failure runs the same command (``retrieval.commands``) or fails
  the same test; when the earlier one was resolved (its command passed again afterwards in its session: an edit
  or a stated cause alone may not have held), the later failure is a regression (``Candidate.regression``: the
  day of that passing run).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .commands import canonical, segments
from .evidence import RESOLUTION_CALL, RESOLUTION_MESSAGE, Candidate
from .terms import PreparedTerms, ascii_lower, match_variants
from .variants import holds_word, term_forms

#: What a later decision says when it reverses or replaces an earlier one (lower case, matched as words).
REVERSALS = (
    "instead", "switch", "switching", "switched", "back to", "after all", "no longer", "anymore", "any more",
    "not renewing", "out of the", "take out", "rip out", "get rid of", "stop using", "drop", "dropping", "dropped",
    "replace", "replaces", "replacing", "replaced", "revert", "reverting", "reverted", "roll back", "rolled back",
    "move off", "moving off", "moved off", "move away", "abandon", "abandoning", "ditch", "scrap", "from now on",
    "going forward", "from here on", "is out", "are out", "goes away", "no more", "rather than", "not use",
    "don't use", "won't use", "undo", "change of plan", "changed my mind", "actually", "on second thought",
    "scratch that",
    "改为", "改成", "换成", "放弃", "不再", "代わりに", "やめ", "切り替え", "대신", "바꾸", "바꿨", "되돌", "더 이상",
)
#: A reversal within one session: the same session's later message reverses only when it says so plainly.
SAME_SESSION = ("actually", "on second thought", "scratch that", "changed my mind", "change of plan", "after all",
                "back to", "revert", "reverting", "undo", "no longer", "不再", "やめ", "되돌")
#: Commands that only move around, set up or print: they make no two failures the same.
_PLUMBING = frozenset({"cd", "pushd", "popd", "export", "source", ".", "set", "echo", "printf", "true", "sleep",
                       "ls", "cat", "pwd", "env", "unset", "mkdir"})
#: Test ids a failure names: a pytest node id, a Go test, a Jest/Vitest file.
_TEST_ID = re.compile(r"(?<![\w/.-])[\w/.-]+\.py::[\w\[\]-]+|--- FAIL: (\w+)|"
                      r"(?<![\w/.-])[\w/.-]+\.(?:test|spec)\.[jt]sx?\b")


def _holds(text: str, cues: Sequence[str]) -> bool:
    lowered = ascii_lower(text)
    return any(holds_word(text, lowered, cue) if cue.isascii() else cue in text for cue in cues)


def _subjects(text: str, terms: PreparedTerms, roots: Sequence[str]) -> frozenset[int]:
    """The query terms (by position) a text holds: a plain term or a form of it as a word, another as written."""
    lowered = ascii_lower(text)
    held = set()
    for at, term in enumerate(terms.terms):
        low = ascii_lower(term)
        if low in terms.plain:
            if any(holds_word(text, lowered, form) for form in term_forms(term)):
                held.add(at)
        elif any(v in lowered for v in match_variants([low], roots)):
            held.add(at)
    return frozenset(held)


def _day(when: str | None) -> str:
    return (when or "")[:10] or "an unknown day"


def _is_decision(c: Candidate) -> bool:
    return c.evidence_type == "decision" and not c.kind


def mark_superseded(candidates: Sequence[Candidate], terms: PreparedTerms, roots: Sequence[str]) -> list[Candidate]:
    """``candidates`` with each decision that a later one supersedes marked (module docstring)."""
    decisions = sorted(((c, _subjects(c.text, terms, roots)) for c in candidates if _is_decision(c) and c.observed_at),
                       key=lambda pair: (pair[0].observed_at or "", pair[0].message_ref or ""))
    marks: dict[tuple[str, str | None], str] = {}
    for at, (earlier, subjects) in enumerate(decisions):
        if not subjects:
            continue
        for later, later_subjects in decisions[at + 1:]:
            if later.observed_at == earlier.observed_at or not subjects & later_subjects:
                continue
            cues = SAME_SESSION if later.session_ref == earlier.session_ref else REVERSALS
            if _holds(later.text, cues):
                ref = later.message_ref if later.message_ref and len(later.message_ref) <= 80 else "a later decision"
                marks[(earlier.session_ref, earlier.message_ref)] = f"{ref} on {_day(later.observed_at)}"
                break
    return [c._replace(superseded_by=marks[(c.session_ref, c.message_ref)])
            if (c.session_ref, c.message_ref) in marks else c for c in candidates]


def _is_failure(c: Candidate) -> bool:
    return c.evidence_type == "prior_failure" and c.kind not in (RESOLUTION_MESSAGE, RESOLUTION_CALL)


def _runs(c: Candidate) -> frozenset[str]:
    """What a failed call ran (its segments' canonical commands, but for moving around and printing) and the
    tests it names."""
    keys = {f"{found.runner} {' '.join(found.args)}" for segment in segments(c.command or "")
            for found in canonical(segment) if found.runner not in _PLUMBING}
    keys.update(f"test:{m.group(1) or m.group(0)}" for m in _TEST_ID.finditer(c.text))
    return frozenset(keys)


def _resolves(c: Candidate) -> bool:
    """Whether what happened after a failure shows it resolved: the failed command passing again. An edit, a stated
    cause or a user's reply may precede a fix that did not hold; only the passing run says it did."""
    return c.kind == RESOLUTION_CALL and not c.edit


def mark_regressions(candidates: Sequence[Candidate]) -> list[Candidate]:
    """``candidates`` with each failure that recurs after a resolved failure of the same command or test marked
    (module docstring)."""
    fixed: dict[str | None, str] = {}  # a resolved failure's ref -> when the first thing after it happened
    for c in candidates:
        if c.follows is not None and c.observed_at and _resolves(c) and (
                c.follows not in fixed or c.observed_at < fixed[c.follows]):
            fixed[c.follows] = c.observed_at
    failures = sorted((c for c in candidates if _is_failure(c) and c.observed_at and c.command),
                      key=lambda c: (c.observed_at or "", c.message_ref or ""))
    keys = {id(c): _runs(c) for c in failures}
    marks: dict[tuple[str, str | None], str] = {}
    for at, later in enumerate(failures):
        for earlier in reversed(failures[:at]):
            when = fixed.get(earlier.message_ref)
            if when is not None and when < (later.observed_at or "") and keys[id(earlier)] & keys[id(later)]:
                marks[(later.session_ref, later.message_ref)] = _day(when)
                break
    return [c._replace(regression=marks[(c.session_ref, c.message_ref)])
            if (c.session_ref, c.message_ref) in marks else c for c in candidates]
