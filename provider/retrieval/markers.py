"""Which texts hold a marker word, decided in Python exactly as FTS5 decides ``MATCH`` of the marker
expression (``terms.marker_expression``), for the texts of a small scope that the provider already read.

FTS5 matches ``"fail"*`` when a token of the indexed text starts with the query's token ``fail``, and
``"went with"`` when two consecutive tokens are ``went`` and ``with`` (``"let's"*``: ``let``, then a token
starting with ``s``). The tokens here come from the live tokenizer itself (``apsw``'s access to SQLite's
FTS5 tokenizers, over an in-memory database: no file is opened), so a text's tokens are the index's tokens.

Each text becomes its tokens joined by NUL, with a NUL before and after; the texts are joined by U+0001.
Neither character is ever part of a token (the default ``unicode61`` keeps letters, numbers and private-use
characters only), so a marker is held exactly where its pattern occurs: NUL + prefix for a one-token word,
NUL + tokens joined by NUL (+ NUL unless the last token is a prefix) for a longer one. One ``str.find`` scan
per pattern over all the texts.

Used only under the default ``unicode61`` tokenizer (no options; it reports no colocated tokens).
``tests/unit/test_markers.py`` checks the answers against SQLite's own FTS5 ``MATCH``.
"""

from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Final, NamedTuple, cast

import apsw

from .terms import PreparedTerms, prepare_terms

#: Tokens of a text (``apsw.FTS5_TOKENIZE_QUERY`` or ``_DOCUMENT``).
Tokens = Callable[[str], list[str]]
_BETWEEN_WORDS = "\x00"
_BETWEEN_TEXTS = "\x01"


class UndecidableText(Exception):
    """A text cannot be decided here (not text, or the tokenizer refused it): FTS5 decides instead."""


def fts5_tokens(spec: str, *, query: bool) -> Tokens:
    """The tokens the FTS5 tokenizer ``spec`` (``tokenize=`` words; default ``unicode61``) gives a text as a
    query (``query``) or as an indexed document. One in-memory connection per spec and mode."""
    words = spec.split() or ["unicode61"]
    memory = apsw.Connection(":memory:")  # an in-memory database: no file is opened
    tokenizer = memory.fts5_tokenizer(words[0], words[1:])
    mode = apsw.FTS5_TOKENIZE_QUERY if query else apsw.FTS5_TOKENIZE_DOCUMENT

    def tokens(text: str) -> list[str]:
        # Without offsets and colocated tokens apsw gives the tokens themselves, as str.
        found = tokenizer(text.encode("utf-8"), mode, None, include_offsets=False, include_colocated=False)
        return cast("list[str]", found)

    return tokens


def token_string(document: Tokens, text: object) -> str:
    """A text's tokens joined by NUL, with a NUL before and after (module docstring); raises
    :class:`UndecidableText` when only FTS5 can tell (a text that is not a ``str``, or that the tokenizer
    refuses)."""
    if text is None:
        return _BETWEEN_WORDS  # FTS5 indexes no token of a NULL
    if type(text) is not str:
        raise UndecidableText
    try:
        return _BETWEEN_WORDS + _BETWEEN_WORDS.join(document(text)) + _BETWEEN_WORDS
    except (UnicodeError, apsw.Error) as error:  # a lone surrogate; the tokenizer refused it
        raise UndecidableText from error


class MarkerMatcher(NamedTuple):
    """An OR of words (or phrases) as patterns over joined tokens (module docstring)."""

    patterns: tuple[str, ...]
    document: Tokens

    def held(self, texts: Sequence[object]) -> list[bool]:
        """Whether each text (a message's whole text; None for NULL) matches the expression; raises
        :class:`UndecidableText` when only FTS5 can tell (a text that is not a ``str``, or that the tokenizer
        refuses)."""
        return self.held_in([token_string(self.document, text) for text in texts])

    def held_in(self, joined: Sequence[str]) -> list[bool]:
        """:meth:`held` of texts already turned into :func:`token_string` (by the same tokenizer)."""
        starts: list[int] = []
        at = 0
        for part in joined:
            starts.append(at)
            at += len(part) + 1
        every = _BETWEEN_TEXTS.join(joined)
        held = [False] * len(joined)
        for pattern in self.patterns:
            found = every.find(pattern)
            while found >= 0:
                index = bisect_right(starts, found) - 1
                held[index] = True
                if index + 1 >= len(starts):
                    break
                found = every.find(pattern, starts[index + 1])
        return held

    def holds(self, text: object) -> bool:
        """:meth:`held` of one text."""
        return self.held([text])[0]


def decides_markers(tokenizer: str | None, tokenizer_spec: str | None) -> bool:
    """Whether this module decides the marker expression for the live tokenizer: the default ``unicode61``
    (``tokenize=`` absent, or exactly ``unicode61``), the one it was proven against."""
    return tokenizer == "unicode61" and (tokenizer_spec is None or tokenizer_spec.split() == ["unicode61"])


def _term_matcher(tokens: Callable[..., Tokens], fts_terms: tuple[str, ...]) -> MarkerMatcher | None:
    query = tokens("unicode61", query=True)
    patterns: list[str] = []
    for quoted in fts_terms:
        inner = quoted[1:-1]
        if len(quoted) < 2 or quoted[0] != '"' or quoted[-1] != '"' or inner.replace('""', "").count('"'):
            return None
        found = query(inner.replace('""', '"'))
        if not found:
            return None
        patterns.append(_BETWEEN_WORDS + _BETWEEN_WORDS.join(found) + _BETWEEN_WORDS)
    if not patterns:
        return None
    return MarkerMatcher(tuple(dict.fromkeys(patterns)), tokens("unicode61", query=False))


def _marker_matcher(tokens: Callable[..., Tokens], words: tuple[str, ...]) -> MarkerMatcher | None:
    query = tokens("unicode61", query=True)
    patterns: list[str] = []
    for word in words:
        found = query(word)
        if not found:
            return None
        prefix = " " not in word  # terms.marker_expression: the prefix form unless the word has a space
        patterns.append(_BETWEEN_WORDS + _BETWEEN_WORDS.join(found) + ("" if prefix else _BETWEEN_WORDS))
    return MarkerMatcher(tuple(dict.fromkeys(patterns)), tokens("unicode61", query=False))


#: Tokenizers (by spec and mode) and matchers a :class:`Tokenizers` keeps at most, least recently used out.
TOKENIZERS_KEPT: Final = 8
MATCHERS_KEPT: Final = 16


@dataclass(slots=True)
class Tokenizers:
    """The live tokenizer's tokens (one in-memory connection per spec and mode) and the matchers built on them.
    A warm process keeps one; each value is a pure function of its arguments."""

    tokens: Callable[..., Tokens] = field(default_factory=lambda: lru_cache(maxsize=TOKENIZERS_KEPT)(fts5_tokens))
    _terms: Callable[[tuple[str, ...]], MarkerMatcher | None] = field(init=False)
    _markers: Callable[[tuple[str, ...]], MarkerMatcher | None] = field(init=False)

    def __post_init__(self) -> None:
        self._terms = lru_cache(maxsize=MATCHERS_KEPT)(partial(_term_matcher, self.tokens))
        self._markers = lru_cache(maxsize=MATCHERS_KEPT)(partial(_marker_matcher, self.tokens))

    def prepare_terms(self, raw_terms: Sequence[str], *, tokenizer: str, spec: str | None,
                      scripts: Mapping[str, str] | None = None) -> PreparedTerms:
        """``terms.prepare_terms`` with the query tokens of the live tokenizer (``spec``; None: ``unicode61``)."""
        return prepare_terms(raw_terms, tokenizer=tokenizer, tokenize=self.tokens(spec or "unicode61", query=True),
                             scripts=scripts)

    def term_matcher(self, fts_terms: Sequence[str]) -> MarkerMatcher | None:
        """The matcher of the query terms' half of an FTS expression, ``"term" OR "term" …``
        (``PreparedTerms.fts_any`` under ``unicode61``): each quoted string is a phrase of its query tokens, never
        a prefix. None when a term is not one quoted string or gives no token (FTS5 then decides)."""
        return self._terms(tuple(fts_terms))

    def marker_matcher(self, words: Sequence[str]) -> MarkerMatcher | None:
        """The matcher of ``terms.marker_expression(words, "unicode61")``; None when a word gives no token."""
        return self._markers(tuple(words))
