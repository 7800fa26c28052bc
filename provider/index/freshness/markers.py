"""Marker rows (``__…__``): last build, app heartbeat, last successful app build, provider transcript markers."""

from collections.abc import Mapping
from typing import Final, NamedTuple

from .rows import number

#: Obelisk's ``APP_HEARTBEAT_FRESH_MS``: a heartbeat younger than this means the app daemon is alive.
HEARTBEAT_FRESH_MS: Final = 60_000.0
#: ``__app_last_successful_build__`` and ``__last_build__`` come from separate clock reads in one finalize;
#: a later, separate build is at least the app's 2.5 s debounce (or the CLI's 30 s) away.
APP_BUILD_SLACK_MS: Final = 1_000.0

#: A provider's transcript marker is ``__<source>_canonical_transcript_v<decimal digits>__``.
_MARKER_INFIX: Final = "_canonical_transcript_v"


class Markers(NamedTuple):
    """The marker values that bear on the verdict."""

    last_build: float | None
    heartbeat: float | None
    heartbeat_present: bool
    app_success: float | None
    provider_sources: frozenset[str]


def marker_source(key: str) -> str | None:
    """The source a provider transcript marker names (``__<source>_canonical_transcript_v<digits>__``, the
    source one or more characters, none a newline; the digits any Unicode decimal digits), else None.

    String tests, not a regular expression: a request reads a handful of marker keys once, and the first
    use of the regular expression engine in a request costs more than the tests."""
    if len(key) < 4 or not (key.startswith("__") and key.endswith("__")):
        return None
    source, infix, version = key[2:-2].rpartition(_MARKER_INFIX)
    if not (infix and source and version.isdecimal()) or "\n" in source:
        return None
    return source


def read_markers(markers: Mapping[str, object]) -> Markers:
    """Marker values by key (from ``split_rows``) read into ``Markers``."""
    sources: set[str] = set()
    for key in markers:
        source = marker_source(key)
        if source is not None:
            sources.add(source)
    return Markers(
        last_build=number(markers.get("__last_build__")),
        heartbeat=number(markers.get("__app_heartbeat__")),
        heartbeat_present="__app_heartbeat__" in markers,
        app_success=number(markers.get("__app_last_successful_build__")),
        provider_sources=frozenset(sources),
    )
