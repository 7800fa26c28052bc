"""Query terms are data: normalisation, quoting, tokenizer-aware dropping, and MATCH never raising."""

from __future__ import annotations

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from obelisk_session_evidence.errors import InvalidQueryTerms
from obelisk_session_evidence.retrieval.markers import Tokenizers, Tokens
from obelisk_session_evidence.retrieval.terms import (
    DECISION_WORDS,
    combined_expression,
    fts_string,
    match_variants,
    normalise,
    prepare_terms,
)

_TOKENIZERS = Tokenizers()


def _tokenize_with(spec: str) -> Tokens:
    """The live tokenizer's query tokens, as a request gets them."""
    return _TOKENIZERS.tokens(spec, query=True)


DOCS = [
    "Traceback: ModuleNotFoundError: No module named 'jwt' in src/auth/token.py",
    "ran pytest -k auth and it failed",
    "snake_case_name is used here",
    "数据库连接错误 happened during migration",
    "use NEAR and AND as words",
    "quick ok",
    'a "quoted" word and C++ code',
    "text: colon uuid: u1",
]


def _db(tokenizer: str) -> apsw.Connection:
    con = apsw.Connection(":memory:")
    con.execute(f"CREATE VIRTUAL TABLE t USING fts5(body, tokenize='{tokenizer}')")
    for doc in DOCS:
        con.execute("INSERT INTO t(body) VALUES (?)", (doc,))
    return con


def _match(con: apsw.Connection, expression: str) -> int:
    return int(con.execute("SELECT count(*) FROM t WHERE t MATCH ?", (expression,)).fetchall()[0][0])


@pytest.mark.parametrize(("raw", "expected"), [
    ("ＮＥＡＲ（ａｕｔｈ）", "NEAR(auth)"),
    ("a\x00b", "a b"),
    ("  many   spaces\t\nhere ", "many spaces here"),
    ("zero\u200bwidth", "zero width"),
    ("ok", "ok"),
])
def test_normalise(raw: str, expected: str) -> None:
    assert normalise(raw) == expected


def test_fts_string_doubles_quotes() -> None:
    assert fts_string('say "hi"') == '"say ""hi"""'


@pytest.mark.parametrize("raw", [
    "src/auth/token.py", "pytest -k auth", "-k", "text: colon", "uuid: u1", "NEAR(auth pytest)",
    "auth OR snake", "auth NOT pytest", "NOT auth", "AND", "ran^", "(auth", "C++", "*", '"hello',
    "{text}: auth", "module*", "a\x00NEAR", "ＡＮＤ ＯＲ", "'; DROP TABLE messages; --", "數據庫",
])
@pytest.mark.parametrize("tokenizer", ["unicode61", "trigram", "porter unicode61", "ascii"])
def test_hostile_terms_never_raise_in_match(raw: str, tokenizer: str) -> None:
    con = _db(tokenizer)
    searchable = _searchable([raw])
    try:
        terms = prepare_terms([raw], tokenizer=tokenizer.rsplit(maxsplit=1)[-1] if tokenizer.startswith("porter")
                              else tokenizer, tokenize=_tokenize_with(tokenizer))
    except InvalidQueryTerms:
        assert not searchable, f"{raw!r} holds a letter or digit and was still refused"
        return
    assert searchable, f"{raw!r} holds no letter or digit and was still admitted"
    assert terms.fts_terms or terms.post_filter_terms
    expression = terms.fts_any()
    if expression is not None:
        _match(con, expression)
        _match(con, combined_expression(terms, DECISION_WORDS, tokenizer) or expression)


def _searchable(raw: list[str]) -> bool:
    """Whether some term still holds a letter or digit once normalised: exactly those are admitted."""
    return any(ch.isalnum() for term in raw for ch in normalise(term))


def test_operators_are_literal_words() -> None:
    con = _db("unicode61")
    terms = prepare_terms(["NEAR"], tokenizer="unicode61", tokenize=_tokenize_with("unicode61"))
    assert _match(con, terms.fts_any() or "") == 1  # the one document that says NEAR


def test_terms_that_tokenize_to_nothing_are_dropped() -> None:
    terms = prepare_terms(["---", "jwt"], tokenizer="unicode61", tokenize=_tokenize_with("unicode61"))
    assert terms.fts_terms == ('"jwt"',)
    with pytest.raises(InvalidQueryTerms):
        prepare_terms(["---", "***", "\x00"], tokenizer="unicode61", tokenize=_tokenize_with("unicode61"))


def test_trigram_short_terms_become_a_disclosed_post_filter() -> None:
    terms = prepare_terms(["quick", "ok"], tokenizer="trigram", tokenize=_tokenize_with("trigram"))
    # The term first, then the whole-word forms of it (never the short term, never a prefix query).
    assert terms.fts_terms[0] == '"quick"' and '"ok"' not in terms.fts_terms
    assert all(t.startswith('"quick') and t.endswith('"') for t in terms.fts_terms)
    assert terms.post_filter_terms == ("ok",)
    assert "ok" in terms.instr_terms
    assert "trigram_short_term_post_filter" in terms.degradations


def test_cjk_under_unicode61_is_prefix_matched_and_disclosed() -> None:
    con = _db("unicode61")
    terms = prepare_terms(["数据库"], tokenizer="unicode61", tokenize=_tokenize_with("unicode61"))
    assert terms.fts_terms == ('"数据库"*',)
    assert "cjk_prefix_match" in terms.degradations
    assert _match(con, terms.fts_any() or "") == 1


def test_duplicate_terms_fold_case_insensitively() -> None:
    terms = prepare_terms(["JWT", "jwt", "Jwt"], tokenizer="unicode61", tokenize=_tokenize_with("unicode61"))
    assert terms.terms == ("JWT",)
    assert terms.instr_terms == ("jwt",)


_PIECES = [*' "\'-:*^(){}+\\,.\t\x00NEAROTDtxuiK数据', "AND", "OR", "NOT", "NEAR", "text", "uuid"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=12).map("".join), min_size=1, max_size=5))
def test_fuzzed_terms_never_reach_match_as_syntax(raw: list[str]) -> None:
    con = _db("unicode61")
    try:
        terms = prepare_terms(raw, tokenizer="unicode61", tokenize=_tokenize_with("unicode61"))
    except InvalidQueryTerms:
        assert not _searchable(raw), f"{raw!r} holds a letter or digit and was still refused"
        return
    assert _searchable(raw) and terms.fts_terms
    if terms.fts_any():
        _match(con, terms.fts_any() or "")


def test_a_quoted_command_matches_its_json_escaped_tool_input() -> None:
    """A command with double quotes is stored escaped in a tool call's input_json (codex: ``sed -n \\"1,80p\\"``);
    found on the real-Obelisk replay (issue 14), where such repeats went unrecognised."""
    import json

    term = 'sed -n "1,80p" src/acme_api/app.py'
    stored = json.dumps({"command": ["bash", "-lc", term]}).lower()
    assert term not in stored
    assert any(v in stored for v in match_variants([term], []))
    backslash = "grep -e a\\|b app.log"
    assert any(v in json.dumps({"cmd": backslash}) for v in match_variants([backslash], []))



#: The expressions ``retrieval.terms`` used before (compiling them cost about 5 ms of every cold start).
_CJK_RE = r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"
_CONTROL_RE = r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff]"


def _normalise_as_before(term: str) -> str:
    import re
    import unicodedata

    return re.sub(r"\s+", " ", re.sub(_CONTROL_RE, " ", unicodedata.normalize("NFKC", term))).strip()


def test_character_classes_match_the_regular_expressions_they_replace() -> None:
    """``has_cjk`` and the control-character table agree with the expressions they replace on every code point
    and on mixed text."""
    import re

    from obelisk_session_evidence.retrieval.terms import _CONTROL_TO_SPACE, has_cjk

    every = "".join(map(chr, range(0x110000)))
    assert every.translate(_CONTROL_TO_SPACE) == re.sub(_CONTROL_RE, " ", every)
    assert [c for c in every if has_cjk(c)] == re.findall(_CJK_RE, every)
    for text in ("", "ascii only", "数据库连接错误 happened", "é ß \u303f", "\u30ff", "x\uf900", "\ufb00\U00020000",
                 "a\x00b\u200b\u2028\ufeffc"):
        assert has_cjk(text) is bool(re.search(_CJK_RE, text))
        assert normalise(text) == _normalise_as_before(text)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_has_cjk_and_normalise_agree_with_the_expressions_on_any_text(text: str) -> None:
    import re

    from obelisk_session_evidence.retrieval.terms import has_cjk

    assert has_cjk(text) is bool(re.search(_CJK_RE, text))
    assert normalise(text) == _normalise_as_before(text)
