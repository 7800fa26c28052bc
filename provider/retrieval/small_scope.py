"""A small scope's rows of a template with marker words, read from the scope's own messages that hold one.

The template's expression is ``(terms) AND (markers)``, and a row matches it exactly when it matches both halves.
So the scope's messages holding a marker word are listed first (once per index state and scope set when a warm
process remembers them), then only those are matched against the terms (``scope_rows``, by rowid) instead of
expanding every marker prefix over the whole index. They are listed from the texts (``cue_text`` lists them
with their lengths, ``cue_bodies`` reads the texts, ``markers`` decides each exactly as FTS5 would under the
default tokenizer), or, when the texts cannot tell, by FTS5 itself (``cue_rows``). The rows are the template's;
without bm25 their SQL order may differ, so they stand in only when fewer than ``:limit``: then nothing was cut,
and the answer's order is decided after the SQL (``fold``) by score, kind, time and refs alone.
"""

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Protocol, TypeVar

from ..index.connection import ReadSnapshot
from ..paths import Roots
from ..templates.catalog import Template
from ..templates.params import bind
from . import planner
from .hits import SCOPE_COLUMNS, RawHit, check_scope
from .markers import MarkerMatcher, UndecidableText, token_string
from .planner import Step

T = TypeVar("T")
Row = tuple[Any, ...]


class Remembers(Protocol):
    """What a warm process keeps for the index's state: the value kept for ``part``, else ``compute()``."""

    def get(self, part: tuple[object, ...], compute: Callable[[], T]) -> T: ...


@dataclass(slots=True)
class ScopeReads:
    """What a request's reads of its scope share: the snapshot, the scope every row is checked against, what a
    warm process remembers (None: nothing, a one-shot request), the terms' matcher (None: FTS5 alone decides the
    terms) and the texts tokenized so far, by message rowid (a text read for two templates is tokenized once)."""

    snap: ReadSnapshot
    sources: Sequence[str]
    roots: Roots
    in_scope: frozenset[str]
    memo: Remembers | None
    term_matcher: MarkerMatcher | None = None
    tokens: dict[int, str] = field(default_factory=dict)

    def remember(self, part: tuple[object, ...], compute: Callable[[], T]) -> T:
        return compute() if self.memo is None else self.memo.get(part, compute)

    def checked(self, template: Template, values: Mapping[str, Any]) -> tuple[dict[str, int], list[Row]]:
        """The column positions and rows of ``template``, each row checked against the scope as every row is
        (once per distinct value of the columns the check reads: the rows of one session share theirs). The
        positions are known only when there is a row: callers read them only then."""
        found = self.snap.rows(template.sql, bind(template, values))
        names = self.snap.last_columns
        scope_columns = [i for i, name in enumerate(names) if name in SCOPE_COLUMNS]
        if found and scope_columns:
            key_of = itemgetter(*scope_columns)
            distinct = list({key_of(row): row for row in found}.values())
        else:
            distinct = found
        for row in distinct:
            check_scope(RawHit(template, dict(zip(names, row, strict=True))), self.sources, self.roots, self.in_scope)
        return {name: i for i, name in enumerate(names)}, found


def scope_rows_by_markers(reads: ScopeReads, step: Step, values: Mapping[str, Any], *, markers: str,
                          matcher: MarkerMatcher | None, terms: str) -> list[Row] | None:
    """The template's rows by ``step`` (module docstring), or None when the step cannot stand in for it.
    ``markers`` and ``terms`` are the two halves of its FTS expression; ``matcher`` decides ``markers`` in Python."""
    scope_key = (markers, values["sources"], values["roots"], values["until"], tuple(sorted(reads.in_scope)))
    rowids: tuple[int, ...] | None = None
    if step.texts is not None and matcher is not None:
        listing, bodies = step.texts
        text_values = {**values, "limit": planner.CUE_TEXT_ROWS}
        rowids = reads.remember(("cue_text", listing.digest, *scope_key),
                                lambda: rowids_from_texts(reads, listing, bodies, matcher, text_values))
    if rowids is None and step.cue_rows is not None:
        cue_rows = step.cue_rows
        cue_values = {**values, "fts": markers, "limit": planner.CUE_ROWS_CEILING}
        rowids = reads.remember(("cue_rows", cue_rows.digest, *scope_key),
                                lambda: rowids_by_fts(reads, cue_rows, cue_values))
    if rowids is None:
        return None  # too many, or not decidable here: the scope is not small
    held = json.dumps(list(holding_terms(reads, rowids)))
    rows = reads.snap.rows(step.template.sql, bind(step.template, {**values, "rows": held, "fts": terms}))
    return rows if len(rows) < values["limit"] else None


def holding_terms(reads: ScopeReads, rowids: tuple[int, ...]) -> tuple[int, ...]:
    """The marker rows that also hold the query terms, as far as Python can tell from the texts this request
    tokenized (all of them, or the rows are passed on as they are: remembered rowids come without their texts).
    Exact under the default tokenizer (``markers``), and ``scope_rows`` matches them in FTS5 again."""
    tokens, matcher = reads.tokens, reads.term_matcher
    if matcher is None or any(rowid not in tokens for rowid in rowids):
        return rowids
    held = matcher.held_in([tokens[rowid] for rowid in rowids])
    return tuple(rowid for rowid, hit in zip(rowids, held, strict=True) if hit)


def rowids_by_fts(reads: ScopeReads, cue_rows: Template, values: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The rowids ``cue_rows`` lists (FTS5's match of the marker words in the scope), or None past its ceiling."""
    found = reads.snap.rows(cue_rows.sql, bind(cue_rows, values))
    if len(found) >= planner.CUE_ROWS_CEILING:
        return None
    names = reads.snap.last_columns
    rowids = []
    for row in found:
        record = dict(zip(names, row, strict=True))
        check_scope(RawHit(cue_rows, record), reads.sources, reads.roots, reads.in_scope)  # as every row
        rowids.append(int(record["message_rowid"]))
    return tuple(rowids)


def rowids_from_texts(reads: ScopeReads, listing: Template, bodies: Template, matcher: MarkerMatcher,
                      values: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The rowids ``cue_rows`` would list, from the scope's texts: ``listing`` (``cue_text``) lists the messages
    and their text lengths, ``bodies`` (``cue_bodies``) reads the texts not yet tokenized in this request. None
    when the scope has ``:limit`` such messages or more, more than ``CUE_TEXT_CHARS`` characters in all, or a
    text only FTS5 can judge (longer than ``CUE_TEXT_CAP``, or not text)."""
    at, listed = reads.checked(listing, values)
    if len(listed) >= int(values["limit"]):
        return None
    if not listed:
        return ()  # the scope holds no such message (say, only the user's prompt): no row holds a marker word
    rowid, length = at["message_rowid"], at["body_chars"]
    if not _within_caps(listed, rowid, length):
        return None
    joined = _token_strings(reads, bodies, matcher, values, listed, rowid=rowid, length=length)
    if joined is None:
        return None
    if reads.memo is None and reads.term_matcher is not None:
        # Nothing is remembered (a one-shot request): only the rows holding the terms are looked up afterwards
        # (``holding_terms``), so the markers need not be found in the others.
        kept = reads.term_matcher.held_in(joined)
        listed = [row for row, hit in zip(listed, kept, strict=True) if hit]
        joined = [text for text, hit in zip(joined, kept, strict=True) if hit]
    held = matcher.held_in(joined)
    return tuple(row[rowid] for row, hit in zip(listed, held, strict=True) if hit)


def _within_caps(listed: Sequence[Row], rowid: int, length: int) -> bool:
    """Whether every listed text may be tokenized here: integer rowids and lengths (FTS5 judges a database that
    says otherwise), none longer than ``CUE_TEXT_CAP``, ``CUE_TEXT_CHARS`` in all at most."""
    chars = 0
    for row in listed:
        if type(row[rowid]) is not int or (row[length] is not None and type(row[length]) is not int):
            return False
        if row[length] is not None and row[length] > planner.CUE_TEXT_CAP:
            return False
        chars += row[length] or 0
    return chars <= planner.CUE_TEXT_CHARS


def _token_strings(reads: ScopeReads, bodies: Template, matcher: MarkerMatcher, values: Mapping[str, Any],
                   listed: Sequence[Row], *, rowid: int, length: int) -> list[str] | None:
    """Each listed text as ``markers.token_string``, the texts not yet tokenized read by ``bodies``; None when a
    text is not read back whole or only FTS5 can judge it."""
    tokens = reads.tokens
    wanted = [row[rowid] for row in listed if row[rowid] not in tokens and row[length] is not None]
    try:
        if wanted:
            got, read = reads.checked(bodies, {**values, "rows": json.dumps(wanted), "cap": planner.CUE_TEXT_CAP,
                                               "limit": len(wanted) + 1})
            texts = {row[got["message_rowid"]]: row[got["body"]] for row in read}
            if any(texts.get(key) is None for key in wanted):
                return None  # a listed text not read back whole: FTS5 judges the scope
            for key in wanted:
                tokens[key] = token_string(matcher.document, texts[key])
        empty = token_string(matcher.document, None)  # a NULL text holds no token
        return [tokens[row[rowid]] if row[length] is not None else empty for row in listed]
    except UndecidableText:
        return None
