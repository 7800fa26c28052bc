"""``index_state`` rows as the caller passed them: unit rows by path, marker values by key."""

import math
import os
from collections.abc import Iterable
from typing import NamedTuple

IndexRow = tuple[str, float | None, int | None, str | None]


class Row(NamedTuple):
    # A NamedTuple, not a frozen dataclass: one is built per index_state row (20,000 at 1M messages).
    mtime: object
    lines: object
    cursor: object


def split_rows(index_rows: object) -> tuple[dict[str, Row], dict[str, object]]:
    """Unit rows by path and marker values by key; rows not shaped (text path, _, _, _) are skipped."""
    units: dict[str, Row] = {}
    markers: dict[str, object] = {}
    if not isinstance(index_rows, Iterable):
        return units, markers
    for row in index_rows:
        try:
            path, mtime, lines, cursor = row
        except (TypeError, ValueError):
            continue
        if not isinstance(path, str) or not path:
            continue
        if len(path) >= 4 and path.startswith("__") and path.endswith("__"):
            markers[path] = mtime
        else:
            units[path] = Row(mtime=mtime, lines=lines, cursor=cursor)
    return units, markers


def lookup_row(rows: dict[str, Row], path: str) -> Row | None:
    """The row of ``path``, else the row of its resolved form."""
    row = rows.get(path)
    if row is None:
        real = os.path.realpath(path)
        row = rows.get(real) if real != path else None
    return row


def number(value: object) -> float | None:
    """A finite-or-infinite float from an int/float column value; None for bool, NaN or anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    result = float(value)
    return None if math.isnan(result) else result
