"""``retrieval.markers`` decides the marker expression exactly as SQLite's FTS5 ``MATCH`` does.

Every generated text is indexed in a real FTS5 table (the default ``unicode61`` tokenizer, as Obelisk declares
``messages_fts``) and matched against the provider's own marker expression (``terms.marker_expression``); the
Python matcher must give the same answer for every text: ASCII and not, upper case, diacritics, apostrophes,
phrases split by punctuation, CJK runs, a marker inside a longer word or at the end of one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from obelisk_session_evidence.errors import ProviderError
from obelisk_session_evidence.retrieval.markers import (
    MarkerMatcher,
    Tokenizers,
    UndecidableText,
    decides_markers,
    fts5_tokens,
    token_string,
)
from obelisk_session_evidence.retrieval.terms import (
    DECISION_CUES,
    DECISION_WORDS,
    FAILURE_CUES,
    FAILURE_WORDS,
    MARKERS,
    PreparedTerms,
    marker_expression,
    prepare_terms,
    unsegmented,
)

_TOKENIZERS = Tokenizers()


def marker_matcher(words: Sequence[str]) -> MarkerMatcher | None:
    return _TOKENIZERS.marker_matcher(words)


def term_matcher(fts_terms: Sequence[str]) -> MarkerMatcher | None:
    return _TOKENIZERS.term_matcher(fts_terms)


#: The marker word lists the engine passes under unicode61 (``terms.MARKERS``: the words and the CJK words).
WORD_LISTS = {name: tuple(markers.fts_words("unicode61")) for name, markers in MARKERS.items()}
assert set(WORD_LISTS) == {"failure", "decision"}
assert WORD_LISTS["failure"] == (*FAILURE_WORDS, *unsegmented(FAILURE_CUES))
assert WORD_LISTS["decision"] == (*DECISION_WORDS, *unsegmented(DECISION_CUES))
#: Pieces a text is built from: the markers themselves in other cases and accents, near misses, separators.
PIECES = [
    "fail", "FAILED", "Failure", "unfail", "fa il", "fāil", "FÁIL", "error", "errors", "terror", "traceback",
    "Exception", "crash", "broke", "refused", "denied", "cannot", "can not", "let's", "lets", "let s", "let",
    "i'll", "I'LL", "ill", "we'll", "went with", "went  with", "went,with", "went-with", "went withdrawn",
    "go with", "going with", "for now", "for nowhere", "from now on", "from now", "instead", "insteadof",
    "decid", "decided", "Décidé", "chose", "choose", "choosing", "opt", "optimal", "drop", "dropped",
    "rather", "should use", "move to", "moving to", "moving", "because", "becau", "favour", "favor", "prefer",
    "失败", "报错", "因为", "决定", "放弃", "改用", "表格组件", "React 19 因为", "，因为", "…失败了",
    "_fail", "fail_", "x1fail", "9error", "\u00a0error", "error\u200b", "\t", "\n", " ", ".", ",", "'",
    "-", "(", ")", "\"", "é", "ß", "İ", "ı", "ﬁ", "😀", "0", "a", "Z",
]
texts = st.lists(st.sampled_from(PIECES), max_size=12).map("".join) | st.text(max_size=40)


@pytest.fixture(scope="module")
def fts() -> Iterator[apsw.Connection]:
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text)")
    yield conn
    conn.close()


def _fts_matches(conn: apsw.Connection, text: str, words: Sequence[str]) -> bool:
    conn.execute("DELETE FROM t")
    conn.execute("INSERT INTO t(text) VALUES (?)", (text,))
    return bool(list(conn.execute("SELECT 1 FROM t WHERE t MATCH ?", (marker_expression(words, "unicode61"),))))


@settings(max_examples=600, deadline=None)
@given(text=texts, kind=st.sampled_from(sorted(WORD_LISTS)))
def test_the_matcher_answers_as_fts5(fts: apsw.Connection, text: str, kind: str) -> None:
    words = WORD_LISTS[kind]
    matcher = marker_matcher(words)
    assert matcher is not None
    try:
        held = matcher.holds(text)
    except UndecidableText:  # only a text the tokenizer cannot take (a lone surrogate) is left to FTS5
        with pytest.raises(UnicodeEncodeError):
            text.encode("utf-8")
        return
    assert held == _fts_matches(fts, text, words), (text, kind)


@pytest.mark.parametrize(("text", "kind", "held"), [
    ("The build FAILED again", "failure", True),
    ("an unfailing test", "failure", False),  # the prefix starts a token, never inside one
    ("Décidé hier", "decision", True),  # diacritics removed, as unicode61 does
    ("we went, with the flow", "decision", True),  # a phrase across punctuation
    ("we went withdrawn", "decision", False),  # a phrase's last word is not a prefix
    ("Let’s go", "decision", True),  # a typographic apostrophe separates tokens as the ASCII one does
    ("Let's go", "decision", True),
    ("React 19 因为表格组件", "decision", True),  # a CJK run opening with a cue
    ("表格组件因为", "decision", False),  # a cue inside a CJK run: one token, not its prefix
    ("", "failure", False),
    ("the exponential backoff keeps retrying after the cap", "decision", False),  # "keeps" tells, decides nothing
    ("We keep Zustand for the store", "decision", True),
    ("keeping Redis as the broker", "decision", True),
])
def test_the_matcher_on_told_cases(fts: apsw.Connection, text: str, kind: str, held: bool) -> None:
    matcher = marker_matcher(WORD_LISTS[kind])
    assert matcher is not None
    assert matcher.holds(text) is held
    assert _fts_matches(fts, text, WORD_LISTS[kind]) is held


def test_only_fts5_judges_what_is_not_text() -> None:
    """A NULL holds no token; a BLOB, a number or a lone surrogate is left to FTS5 (the engine then uses the
    FTS plan)."""
    matcher = marker_matcher(FAILURE_WORDS)
    assert matcher is not None
    assert matcher.holds(None) is False
    for value in (b"fail", 3, 2.5, "fail \ud800"):
        with pytest.raises(UndecidableText):
            matcher.holds(value)


def test_only_the_default_unicode61_tokenizer_is_decided_here() -> None:
    assert decides_markers("unicode61", None)
    assert decides_markers("unicode61", "unicode61")
    assert decides_markers("unicode61", " unicode61 ")
    for tokenizer, spec in (("unicode61", "unicode61 remove_diacritics 2"), ("unicode61", "unicode61 tokenchars _"),
                            ("porter", "porter unicode61"), ("trigram", "trigram"), ("ascii", "ascii"),
                            (None, None)):
        assert not decides_markers(tokenizer, spec), (tokenizer, spec)


@settings(max_examples=200, deadline=None)
@given(batch=st.lists(texts | st.none(), max_size=8), kind=st.sampled_from(sorted(WORD_LISTS)))
def test_a_batch_is_judged_text_by_text(fts: apsw.Connection, batch: list[str | None], kind: str) -> None:
    """Texts judged together (one scan per marker over all of them) get each its own FTS5 answer: a marker is
    never found across two texts, and a later text is not skipped after a hit in an earlier one."""
    words = WORD_LISTS[kind]
    matcher = marker_matcher(words)
    assert matcher is not None
    if any(t is not None and not _encodable(t) for t in batch):
        with pytest.raises(UndecidableText):
            matcher.held(batch)
        return
    assert matcher.held(batch) == [t is not None and _fts_matches(fts, t, words) for t in batch]


def test_a_marker_is_not_found_across_two_texts() -> None:
    matcher = marker_matcher(DECISION_WORDS)
    assert matcher is not None
    assert matcher.held(["we went", "with it", "fine"]) == [False, False, False]
    assert matcher.held(["let", "s go"]) == [False, False]
    assert matcher.held(["because", "x", "because"]) == [True, False, True]


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# --- the query terms' half (``term_matcher``) -------------------------------------------------------------

#: Pieces a query term is built from: words of the texts above, phrases, punctuation, quotes and backslashes.
TERM_PIECES = ["fail", "error", "went with", "Exception", "Décidé", "let's", "ModuleNotFoundError", "npm",
               "run build", "a", "0", "é", "ß", "\"", "'", "-", ".", " ", "_", "/", "\\", "因为", "x1"]
terms_lists = st.lists(st.lists(st.sampled_from(TERM_PIECES), min_size=1, max_size=4).map("".join)
                       | st.text(min_size=1, max_size=12), min_size=1, max_size=3)


def _prepared(raw: Sequence[str]) -> PreparedTerms | None:
    try:
        return prepare_terms(raw, tokenizer="unicode61", tokenize=fts5_tokens("unicode61", query=True))
    except ProviderError:
        return None  # nothing usable: no MATCH runs at all


def _fts_terms_match(conn: apsw.Connection, text: str, expression: str) -> bool:
    conn.execute("DELETE FROM t")
    conn.execute("INSERT INTO t(text) VALUES (?)", (text,))
    return bool(list(conn.execute("SELECT 1 FROM t WHERE t MATCH ?", (expression,))))


@settings(max_examples=500, deadline=None)
@given(raw=terms_lists, batch=st.lists(texts | st.none(), min_size=1, max_size=5))
def test_the_term_matcher_answers_as_fts5(fts: apsw.Connection, raw: list[str], batch: list[str | None]) -> None:
    """The terms' half of every FTS template (``PreparedTerms.fts_any``: quoted phrases OR'd) decided in Python
    gives FTS5's answer for every text, or declines (None) and leaves the decision to FTS5."""
    prepared = _prepared(raw)
    if prepared is None or not prepared.fts_terms:
        return
    matcher = term_matcher(prepared.fts_terms)
    if matcher is None or any(t is not None and not _encodable(t) for t in batch):
        return
    expression = f"({prepared.fts_any()})"
    joined = [token_string(matcher.document, t) for t in batch]
    assert matcher.held_in(joined) == [t is not None and _fts_terms_match(fts, t, expression) for t in batch], \
        (raw, batch)


def test_the_term_matcher_on_told_cases(fts: apsw.Connection) -> None:
    cases = [(["ModuleNotFoundError"], "E   ModuleNotFoundError: No module named 'x'", True),
             (["ModuleNotFound"], "ModuleNotFoundError", False),  # a term is a whole token, never a prefix
             (["run build"], "npm run  build", True), (["run build"], "run the build", False),
             (["décidé"], "DECIDE", True), (["decide"], "Décidé", True),  # diacritics removed, as unicode61 does
             (["decided"], "Décidé", True),  # a plain term's forms reach MATCH too: "decide" is one
             (["Decided"], "Décidé", False),  # a capitalised word is taken as written, without forms
             (['say "hi"'], 'they say "hi" to me', True)]
    for raw, text, held in cases:
        prepared = _prepared(raw)
        assert prepared is not None
        matcher = term_matcher(prepared.fts_terms)
        assert matcher is not None, raw
        assert matcher.held([text]) == [held], (raw, text)
        assert _fts_terms_match(fts, text, f"({prepared.fts_any()})") is held, (raw, text)
    assert term_matcher(['"--"']) is None  # no token: FTS5 decides
    assert term_matcher(['"a" b']) is None  # not one quoted string
