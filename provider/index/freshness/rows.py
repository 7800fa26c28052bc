"""``index_state`` rows as the caller passed them: unit rows by path, marker values by key."""

import math
import os
from collections.abc import Iterable, Mapping
from typing import NamedTuple

IndexRow = tuple[str, float | None, int | None, str | None]
#: A unit row as the judges read it: ``(jsonl_path, mtime, lines_processed, cursor)``, the columns as passed in
#: (any types). The lookup's ``IndexRow`` tuples are kept as they are, no row object built per path.
UnitRow = tuple[str, object, object, object]


class Row(NamedTuple):
    """The columns of one row apart from its path, for ``units.judge_unit``."""

    mtime: object
    lines: object
    cursor: object


def split_rows(index_rows: object) -> tuple[dict[str, UnitRow], dict[str, object]]:
    """Unit rows by path and marker values by key; rows not shaped (text path, _, _, _) are skipped."""
    units: dict[str, UnitRow] = {}
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
            units[path] = (path, mtime, lines, cursor)
    return units, markers


def lookup_row(rows: Mapping[str, UnitRow], path: str) -> UnitRow | None:
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
