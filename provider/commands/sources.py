"""The sources the Obelisk index knows, for ``enable --source`` checks.

One fixed statement through the read-only connection layer: ``SELECT DISTINCT COALESCE(source, 'claude') FROM
sessions`` (Obelisk writes no source for its oldest Claude rows). The answer is the set of names, or None when
the index is missing or cannot be read (``enable`` then says the sources were not checked).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ProviderError
from ..index.connection import Deadline, ReadSnapshot, read_index

SOURCES_SQL = "SELECT DISTINCT COALESCE(source, 'claude') FROM sessions LIMIT 1000"
#: Budget for the lookup (an ``enable`` is interactive; the statement reads one column of ``sessions``).
LOOKUP_DEADLINE_MS = 5000


def known_sources(db_path: Path) -> tuple[tuple[str, ...] | None, str]:
    """(sorted source names, "") or (None, error code) when the index is missing or unreadable."""

    def work(snap: ReadSnapshot) -> tuple[str, ...]:
        return tuple(sorted({str(row[0]) for row in snap.rows(SOURCES_SQL)}))

    try:
        names, _ = read_index(db_path, work, deadline=Deadline(LOOKUP_DEADLINE_MS))
    except ProviderError as err:
        return None, err.code
    return names, ""
