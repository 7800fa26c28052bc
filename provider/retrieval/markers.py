"""Whether a text holds a marker word, decided in Python exactly as FTS5 decides ``MATCH`` of the marker
expression (``terms.marker_expression``), for the texts of a small scope that the provider already read.

FTS5 matches ``"fail"*`` when a token of the indexed text starts with the query's token ``fail``, and
``"went with"`` when two consecutive tokens are ``went`` and ``with`` (``"let's"*``: ``let`` then a token
starting with ``s``). The tokens here come from the live tokenizer itself (``apsw``'s access to SQLite's
FTS5 tokenizers, over an in-memory database: no file is opened), so a text's tokens are the index's tokens.

Used only under the default ``unicode61`` tokenizer (no options), where a token of an ASCII text is a run of
ASCII letters and digits folded to lower case: such a text whose lower-case form holds no marker's first
token holds no marker, and is not tokenized (``MarkerMatcher.prefilter``). Any other text is tokenized
whole. ``tests/test_markers.py`` checks the answers against SQLite's own FTS5 ``MATCH``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import NamedTuple

#: Tokens of a text (``apsw.FTS5_TOKENIZE_QUERY`` or ``_DOCUMENT``); raises on a text the tokenizer refuses.
Tokens = Callable[[str], list[str]]


class UndecidableText(Exception):
    """The text cannot be decided here (not text, or the tokenizer refused it): FTS5 decides instead."""


@lru_cache(maxsize=8)
def fts5_tokens(spec: str, *, query: bool) -> Tokens:
    """The tokens the FTS5 tokenizer ``spec`` (``tokenize=`` words; default ``unicode61``) gives a text as a
    query (``query``) or as an indexed document. One in-memory connection per spec and mode."""
    import apsw

    words = spec.split() or ["unicode61"]
    memory = apsw.Connection(":memory:")  # an in-memory database: no file is opened
    tokenizer = memory.fts5_tokenizer(words[0], words[1:])
    mode = apsw.FTS5_TOKENIZE_QUERY if query else apsw.FTS5_TOKENIZE_DOCUMENT

    def tokens(text: str) -> list[str]:
        found = tokenizer(text.encode("utf-8"), mode, None)
        out = []
        for token in found:
            parts = tuple(token)
            if len(parts) != 3:
                raise UndecidableText  # colocated tokens: not a shape this matcher follows
            out.append(str(parts[2]))
        return out

    return tokens


class MarkerMatcher(NamedTuple):
    """The marker expression of a list of words, as token patterns."""

    prefixes: tuple[str, ...]  # one-token words in prefix form: a token starting with one matches
    phrases: tuple[tuple[tuple[str, ...], bool], ...]  # (tokens, last token in prefix form) of longer words
    prefilter: re.Pattern[str]  # any word's first token, for an ASCII text's lower-case form
    document: Tokens

    def holds(self, text: object) -> bool:
        """Whether ``text`` (a message's whole text) matches the marker expression; raises
        :class:`UndecidableText` when only FTS5 can tell (a text that is not a ``str``)."""
        if text is None:
            return False  # FTS5 indexes no token of a NULL
        if type(text) is not str:
            raise UndecidableText
        if text.isascii() and self.prefilter.search(text.lower()) is None:
            return False
        try:
            tokens = self.document(text)
        except (UnicodeError, ValueError) as error:  # a lone surrogate; a tokenizer error
            raise UndecidableText from error
        except Exception as error:
            raise UndecidableText from error
        return _holds(tokens, self.prefixes, self.phrases)


def _holds(tokens: Sequence[str], prefixes: tuple[str, ...],
           phrases: tuple[tuple[tuple[str, ...], bool], ...]) -> bool:
    if prefixes and any(token.startswith(prefixes) for token in tokens):
        return True
    for phrase, prefix in phrases:
        size = len(phrase)
        head, last = phrase[0], phrase[-1]
        for at in range(len(tokens) - size + 1):
            if tokens[at] != head:
                continue
            if any(tokens[at + k] != phrase[k] for k in range(1, size - 1)):
                continue
            end = tokens[at + size - 1]
            if end.startswith(last) if prefix else end == last:
                return True
    return False


def decides_markers(tokenizer: str | None, tokenizer_spec: str | None) -> bool:
    """Whether this module decides the marker expression for the live tokenizer: the default ``unicode61``
    (``tokenize=`` absent, or exactly ``unicode61``), the one it was proven against."""
    return tokenizer == "unicode61" and (tokenizer_spec is None or tokenizer_spec.split() == ["unicode61"])


def marker_matcher(words: Sequence[str]) -> MarkerMatcher | None:
    """The matcher of ``terms.marker_expression(words, "unicode61")``; None when a word gives no token."""
    return _matcher(tuple(words))


@lru_cache(maxsize=16)
def _matcher(words: tuple[str, ...]) -> MarkerMatcher | None:
    query = fts5_tokens("unicode61", query=True)
    prefixes: list[str] = []
    phrases: list[tuple[tuple[str, ...], bool]] = []
    firsts: list[str] = []
    for word in words:
        tokens = tuple(query(word))
        if not tokens:
            return None
        prefix = " " not in word  # terms.marker_expression: the prefix form unless the word has a space
        if prefix and len(tokens) == 1:
            prefixes.append(tokens[0])
        else:
            phrases.append((tokens, prefix))
        firsts.append(tokens[0])
    prefilter = re.compile("|".join(re.escape(first) for first in sorted(set(firsts))))
    return MarkerMatcher(tuple(prefixes), tuple(phrases), prefilter, fts5_tokens("unicode61", query=False))
