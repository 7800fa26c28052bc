"""What came after a piece of evidence in its scope: a decision reversed by a later one, a failure that came back.

* **Superseded decisions.** A decision is superseded by a later decision of the scope that holds a query term
  too, is about the same subject (:func:`same_subject`: both name the same library, tool, file or setting, or
  share two content words besides the query's; one shared query word alone, such as "retry" in a decision about
  the Stripe SDK and one about a Celery schedule, is not a subject) and says it reverses or replaces something
  (:data:`REVERSALS`:
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
from typing import NamedTuple

from .commands import canonical, segments
from .evidence import RESOLUTION_CALL, RESOLUTION_MESSAGE, Candidate
from .terms import PreparedTerms, ascii_lower, has_cjk, match_variants
from .variants import holds_word, term_forms, word_bases

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
#: Words that say how a decision is made or told, not what it is about (with English function words of four
#: letters or more): two decisions sharing only these share no subject.
_NOT_SUBJECT = frozenset({
    "about", "above", "after", "again", "against", "also", "although", "always", "another", "anymore", "anything",
    "because", "been", "before", "being", "below", "between", "both", "cannot", "could", "does", "doing", "done",
    "down", "during", "each", "either", "else", "even", "ever", "every", "from", "further", "have", "having",
    "here", "hers", "herself", "himself", "however", "into", "itself", "just", "least", "less", "like", "maybe",
    "more", "most", "much", "must", "myself", "neither", "never", "next", "none", "nothing", "once", "only",
    "other", "ours", "ourselves", "over", "same", "should", "since", "some", "still", "such", "than", "that",
    "their", "theirs", "them", "themselves", "then", "there", "these", "they", "this", "those", "though", "through",
    "till", "under", "until", "upon", "very", "want", "wants", "were", "what", "whatever", "when", "where",
    "whether", "which", "while", "will", "with", "within", "without", "would", "your", "yours", "yourself", "okay",
    "sure", "fine", "good", "great", "thanks", "please", "understood", "right", "well", "work", "works", "decide",
    "decided", "decides", "deciding", "decision", "decisions", "chose", "chosen", "choose", "choosing", "choice",
    "prefer", "preferred", "instead", "rather", "favour", "favor", "drop", "dropped", "dropping", "switch",
    "switched", "switching", "switches", "replace", "replaced", "replacing", "replaces", "revert", "reverted",
    "reverting", "keep", "keeps", "kept", "keeping", "stay", "stays", "stayed", "staying", "stick", "sticking",
    "stuck", "going", "goes", "went", "gone", "move", "moved", "moving", "moves", "back", "longer", "take",
    "taking", "took", "taken", "make", "makes", "made", "making", "plan", "plans", "change", "changed", "changes",
    "changing", "actually", "second", "thought", "scratch", "mind", "forward", "ahead", "let", "lets", "shall",
    "need", "needs", "needed", "using", "used", "uses", "time", "first", "later", "now", "today", "anyway"
})
#: Upper-case words that name a kind of thing, not a thing (an SDK, an API): no subject on their own.
_GENERIC_NAMES = frozenset({"ok", "api", "apis", "sdk", "sdks", "cli", "ui", "ux", "url", "urls", "json", "yaml",
                            "csv", "http", "https", "sql", "db", "ci", "cd", "pr", "prs", "id", "ids", "todo",
                            "fyi", "asap", "tl", "dr", "mb", "gb", "kb", "ms"})
_TOKEN = re.compile(r"[A-Za-z0-9][\w./:=@+\[\]-]*[A-Za-z0-9]|[A-Za-z]")
_WORD = re.compile(r"[A-Za-z]+")
#: A token that is a path, a module, a file or a setting: word characters joined by ``.``, ``/``, ``_``, ``=``.
_IDENTIFIER = re.compile(r"[A-Za-z0-9][./_=:]+[A-Za-z0-9]")
#: What ends a sentence (a capitalised word after it may be any word).
_SENTENCE_END = frozenset(".!?:;\n]")
#: Content words two decisions must share, besides the query's, to be about the same subject without a name.
SHARED_WORDS = 2


class Subject(NamedTuple):
    """What a decision is about: the things it names (libraries, tools, files, settings; lower case), its
    content words (lower case, at least four letters, no function or decision word) and every word it holds."""

    names: frozenset[str]
    words: frozenset[str]
    tokens: frozenset[str]


def _named(token: str, start: int, text: str) -> bool:
    """Whether ``token`` names a thing: a path, file or setting, a word with a capital inside (``LaunchDarkly``),
    an upper-case word that is no kind of thing (``RQ``, not ``SDK``), or a capitalised word inside a
    sentence (``Celery``, not a sentence's first word)."""
    if _IDENTIFIER.search(token):
        return True
    if not token.isalpha() or token.islower():
        return False
    low = token.lower()
    if token.isupper():
        return len(token) >= 2 and low not in _GENERIC_NAMES
    if any(ch.isupper() for ch in token[1:]):
        return True
    before = text[:start].rstrip(" \t\"'(`*")
    return bool(before) and before[-1] not in _SENTENCE_END and low not in _NOT_SUBJECT and low != "i"


def subject_of(text: str) -> Subject:
    """The :class:`Subject` of a decision's text. A run of Chinese, Japanese or Korean characters gives its
    two-character pieces as content words (they are not segmented into words)."""
    names: set[str] = set()
    words: set[str] = set()
    tokens: set[str] = set()
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if _named(token, match.start(), text):
            names.add(token.lower())
        tokens.add(token.lower())
        for word in _WORD.findall(token):
            low = word.lower()
            tokens.add(low)
            if len(low) >= 4 and low not in _NOT_SUBJECT:
                words.add(low)
            if word != token and _named(word, match.start(), text) and not word.istitle():
                names.add(low)
    if has_cjk(text):
        pieces = {text[i:i + 2] for i in range(len(text) - 1) if has_cjk(text[i:i + 2]) and text[i:i + 2].isalpha()}
        words.update(p for p in pieces if len(p) == 2 and all(has_cjk(ch) for ch in p))
    return Subject(frozenset(names), frozenset(words), frozenset(tokens))


def _query_words(terms: PreparedTerms) -> frozenset[str]:
    """The bases of the query's words (and its CJK pieces): a word of these is the query's, not a subject."""
    out: set[str] = set()
    for term in terms.terms:
        for word in _WORD.findall(term):
            out.update(word_bases(word.lower()))
        out.update(term[i:i + 2] for i in range(len(term) - 1) if has_cjk(term[i:i + 2]))
    return frozenset(out)


def same_subject(a: Subject, b: Subject, query: frozenset[str] = frozenset()) -> bool:
    """Whether two decisions are about the same subject: a thing one names is in the other too (a query term
    that names a thing counts: both decisions are about it), or they share :data:`SHARED_WORDS` content words
    (inflections meet: ``exports`` is ``export``) that are not the query's."""
    if (a.names | b.names) & a.tokens & b.tokens:
        return True
    b_bases = {base for word in b.words for base in word_bases(word)}
    shared = {word for word in a.words if word_bases(word) & b_bases and not word_bases(word) & query}
    return len(shared) >= SHARED_WORDS


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
            if any(holds_word(text, lowered, form, variant=form != low) for form in term_forms(term)):
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
    decisions = sorted(((c, _subjects(c.text, terms, roots), subject_of(c.text)) for c in candidates
                        if _is_decision(c) and c.observed_at),
                       key=lambda found: (found[0].observed_at or "", found[0].message_ref or ""))
    query = _query_words(terms)
    marks: dict[tuple[str, str | None], str] = {}
    for at, (earlier, subjects, about) in enumerate(decisions):
        if not subjects:
            continue
        for later, later_subjects, later_about in decisions[at + 1:]:
            if later.observed_at == earlier.observed_at or not subjects & later_subjects \
                    or not same_subject(about, later_about, query):
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
