"""Paths against a scope's bound roots: one set of boundary rules for every layer that compares paths.

The rules (used by the row re-check and the scope set of retrieval, the freshness walk, qualification and the
repository-relative display of paths):

* A path is compared only after normalisation. ``lexical`` drops ``.`` and empty (``//``) parts and applies
  ``..``; a path that is not absolute, holds a NUL, or climbs above ``/`` is refused (None), never guessed.
* ``real`` resolves symlinks where the path exists on disk (a ``..`` after a symlink is applied to the
  symlink's target, as the kernel does), and normalises lexically where it does not.
* Containment is on path boundaries: ``/a/b`` owns ``/a/b`` and ``/a/b/c``, never ``/a/bc``.

``Roots`` holds a scope's roots in two forms: every spelling (the one the operator gave and the real path;
both are bound for the lexical SQL prefilter) and the real paths. A recorded path is decided as recorded
first: inside a spelling (``.`` and ``//`` dropped), it is in, whatever a symlink on it points at today (a
link re-pointed after the session, ``~/src/current`` say, must not take the session out of the scope it was
recorded in). Only a path the recorded text does not decide, one under no spelling or holding a ``..`` (whose
meaning after a link is the link target's parent), is resolved (``real``) and compared with the real paths.
It depends on nothing but ``os.path``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field


def lexical(path: str | None) -> str | None:
    """``path`` normalised without the filesystem, or None when it is not absolute or climbs above ``/``."""
    if not isinstance(path, str) or not path.startswith("/") or "\x00" in path:
        return None
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None  # still climbs: refused, never clamped to "/"
            parts.pop()
        else:
            parts.append(part)
    return "/" + "/".join(parts)


def real(path: str | None) -> str | None:
    """``path`` with symlinks resolved where it exists on disk, lexically normalised; None when refused."""
    if lexical(path) is None:
        return None
    assert path is not None  # lexical() refused every non-string
    try:
        resolved = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    return lexical(resolved)


def within(path: str, base: str) -> bool:
    """True when the normalised ``path`` is the normalised ``base`` or lies below it on a path boundary."""
    return path == base or path.startswith(base if base == "/" else base + "/")


def under_root(path: str | None, roots: Iterable[str]) -> bool:
    """True when ``path`` is a root or lies below one on a path boundary, both sides normalised lexically."""
    norm = lexical(path)
    if norm is None:
        return False
    return any(base is not None and within(norm, base) for base in map(lexical, roots))


def _bases(roots: Iterable[str]) -> list[str]:
    """The roots normalised lexically (refused spellings dropped), deepest first."""
    return sorted({b for b in map(lexical, roots) if b is not None}, key=len, reverse=True)


def _shown(path: str, bases: list[str]) -> str:
    """``path`` repository-relative when it lies strictly inside one of ``bases`` (deepest first) after
    normalisation, else ``path`` unchanged: the one rule behind :func:`relative_to_roots` and
    :func:`strip_roots`."""
    norm = lexical(path)
    if norm is None:
        return path
    for base in bases:
        if norm != base and within(norm, base):
            return norm[len(base):].lstrip("/")
    return path


def relative_to_roots(path: str, roots: Iterable[str]) -> str:
    """Show a path inside a bound root repository-relative (deepest root first); leave other paths as they are.

    The same boundary rules as the scope check: ``/r/../x`` is not inside ``/r``, and a root's spelling
    somewhere inside a longer path (``/x/r/y`` for root ``/r``) is not a prefix.
    """
    return _shown(path, _bases(roots))


#: A character that can be part of a path; a path starts at a ``/`` that no such character precedes.
_PATH_CHAR = r"[\w.~/-]"
_PATH_TOKEN = re.compile(f"(?<!{_PATH_CHAR})/{_PATH_CHAR}*")


def strip_roots(text: str, roots: Iterable[str]) -> str:
    """``text`` with every absolute path that lies inside a root made repository-relative.

    Every path in the text (a run of path characters starting with ``/`` where no path character precedes
    it) is shown as :func:`relative_to_roots` shows it: normalised, then made relative to the deepest root
    that contains it on a path boundary. Give every spelling of each root (``Roots.spellings``: the operator's
    and the real path): each is held to the same rules. So ``/x/src/app/y`` keeps ``src/app`` for root
    ``/src/app``, ``/src/app/../other`` is left as it is, ``/src/app//y`` becomes ``y`` (never ``/y``), and
    root ``/`` removes the leading slash of a path, not every slash.
    """
    bases = _bases(roots)
    return _PATH_TOKEN.sub(lambda m: _shown(m.group(0), bases), text)


@dataclass(frozen=True, slots=True)
class Roots:
    """A scope's roots: the spellings bound for the lexical SQL prefilter and that decide a recorded path first,
    and the real paths that decide a path recorded under no spelling.

    ``contains`` resolves a recorded path once per instance (one instance serves one request); equality, hash
    and repr are those of the two path tuples (what was resolved is in none of them).
    """

    spellings: tuple[str, ...]
    real_paths: tuple[str, ...]
    _seen: dict[str, bool] = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def of(cls, given: Iterable[str], stored_real: Iterable[str] = ()) -> Roots:
        """From the spellings the operator gave and, when recorded at enable, their real paths.

        Without recorded real paths (a config written before they were), each given root is resolved now.
        """
        given = tuple(given)
        stored = tuple(s for s in map(lexical, stored_real) if s is not None)
        decided = stored if stored else tuple(r for r in map(real, given) if r is not None)
        spell = [s for s in map(lexical, (*given, *decided)) if s is not None]
        return cls(spellings=tuple(dict.fromkeys(spell)), real_paths=tuple(dict.fromkeys(decided)))

    def contains(self, path: object) -> bool:
        """True when ``path`` (a recorded project path or cwd) lies inside a root: as recorded, inside any
        spelling, when it holds no ``..``; else (the recorded text does not decide) by its real path today."""
        if not isinstance(path, str):
            return False
        known = self._seen.get(path)
        if known is None:
            recorded = lexical(path)
            if recorded is None:
                known = False
            elif ".." not in path.split("/") and any(within(recorded, base) for base in self.spellings):
                known = True  # (a ``..`` after a link means what the link points at: such a path is resolved)
            else:
                resolved = real(path)
                known = resolved is not None and any(within(resolved, base) for base in self.real_paths)
            self._seen[path] = known
        return known
