"""Paths against a scope's bound roots, on path boundaries (``/a/b`` owns ``/a/b/c``, never ``/a/bc``).

Used by the row re-check of retrieval, the freshness walk and qualification alike; it depends on nothing.
"""

from __future__ import annotations

from collections.abc import Iterable


def under_root(path: str | None, roots: Iterable[str]) -> bool:
    """True when ``path`` is a root or lies below one on a path boundary (``/a/b`` never owns ``/a/bc``)."""
    if not path:
        return False
    for root in roots:
        base = root.rstrip("/") or "/"
        if path == base or path.startswith(base if base == "/" else base + "/"):
            return True
    return False


def relative_to_roots(path: str, roots: Iterable[str]) -> str:
    """Show a path inside a bound root repository-relative; leave other paths as they are."""
    for root in sorted(roots, key=len, reverse=True):
        base = root.rstrip("/")
        if path.startswith(base + "/"):
            return path[len(base) + 1:]
    return path


def strip_roots(text: str, roots: Iterable[str]) -> str:
    """``text`` with every ``<root>/`` prefix removed, longest root first: paths become repository-relative."""
    for root in sorted(roots, key=len, reverse=True):
        text = text.replace(root.rstrip("/") + "/", "")
    return text
