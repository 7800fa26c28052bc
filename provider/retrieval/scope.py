"""Path-boundary scope checks, used to re-check every returned row (never to filter silently)."""

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
