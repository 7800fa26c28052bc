"""The assessment's inputs made safe to use: roots (and path-boundary containment), supported sources,
readable homes, and the ``index_state`` rows split into unit rows and marker values. Malformed input is
dropped or recorded as a reason, never raised."""

from __future__ import annotations

import math
import os
import posixpath
import stat as stat_mod
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

from ...paths import under_root
from .context import Ctx, UnitRow

SUPPORTED_SOURCES: Final = frozenset({"claude", "codex", "kimi", "pi"})
_POSIX: Final = os.path is posixpath
_NOT_NORMAL_ENDS: Final = ("/", "/.", "/..")


def norm_path(value: object) -> str | None:
    """An absolute, normalised path string, or None."""
    if type(value) is str:  # the common case: no PathLike to convert
        if _POSIX and "\x00" not in value and already_normal(value):
            return value
        text = value
    elif not isinstance(value, str | os.PathLike):
        return None
    else:
        try:
            text = os.fspath(value)
        except TypeError:
            return None
    if not isinstance(text, str) or "\x00" in text or not os.path.isabs(text):
        return None
    return os.path.normpath(text)


def already_normal(text: str) -> bool:
    """Whether ``posixpath.normpath`` returns this text unchanged and it is absolute: one leading slash, no
    empty, ``.`` or ``..`` component, no trailing slash (what the index stores; anything else is normalised)."""
    return (text[:1] == "/" and "//" not in text and "/./" not in text and "/../" not in text
            and not text.endswith(_NOT_NORMAL_ENDS))


def is_dir(ctx: Ctx, path: str) -> bool:
    """Whether ``path`` is a directory under the assessment's stat (following links); never raises."""
    try:
        return stat_mod.S_ISDIR(ctx.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def prepare_roots(roots: object, stat: Callable[[str], os.stat_result],
                  real_paths: Sequence[str] | None = None) -> tuple[tuple[str, ...], bool]:
    """Normalised roots (plus their resolved forms) and whether every root was a readable directory.
    ``real_paths``: the roots' real paths as the caller already resolved them (``paths.Roots.real_paths``),
    used instead of resolving each root again (``os.path.realpath`` looks at every component of a root)."""
    out: list[str] = []
    all_ok = True
    for raw in roots if isinstance(roots, Sequence) and not isinstance(roots, str) else ():
        root = norm_path(raw)
        if root is None:
            all_ok = False
            continue
        out.append(root)
        if real_paths is None:
            real = os.path.realpath(root)
            if real != root:
                out.append(real)
        try:
            all_ok = all_ok and stat_mod.S_ISDIR(stat(root).st_mode)
        except (OSError, ValueError):
            all_ok = False
    for raw in real_paths or ():
        recorded = norm_path(raw)
        if recorded is not None:
            out.append(recorded)
    return tuple(dict.fromkeys(out)), all_ok


def under_roots(cwd: str, roots: Sequence[str]) -> bool:
    """Path-boundary containment: ``/a/b`` holds ``/a/b`` and ``/a/b/c``, never ``/a/bc``."""
    return under_root(norm_path(cwd), roots)


def wanted_sources(sources: object) -> tuple[str, ...]:
    """The requested source names, stripped, lower-cased and de-duplicated in order."""
    if not isinstance(sources, Sequence) or isinstance(sources, str):
        return ()
    return tuple(dict.fromkeys(s.strip().lower() for s in sources if isinstance(s, str) and s.strip()))


def readable_homes(ctx: Ctx, homes: object) -> list[str]:
    """The homes that are readable directories; any other records ``unreadable_home``."""
    readable: list[str] = []
    for raw in homes if isinstance(homes, Sequence) and not isinstance(homes, str) else ():
        home = norm_path(raw)
        if home is not None and is_dir(ctx, home):
            readable.append(home)
        else:
            ctx.reasons.add("unreadable_home")
    return readable


def split_rows(index_rows: object) -> tuple[dict[str, UnitRow], dict[str, object]]:
    """Unit rows by path and marker values (``__…__`` rows) by key; rows not shaped (text path, _, _, _) are
    skipped."""
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
