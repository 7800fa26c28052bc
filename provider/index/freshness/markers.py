"""Marker rows (``__…__``): last build, app heartbeat, last successful app build, provider transcript markers."""

import re
from collections.abc import Mapping
from typing import Final, NamedTuple

from .rows import number

#: Obelisk's ``APP_HEARTBEAT_FRESH_MS``: a heartbeat younger than this means the app daemon is alive.
HEARTBEAT_FRESH_MS: Final = 60_000.0
#: ``__app_last_successful_build__`` and ``__last_build__`` come from separate clock reads in one finalize;
#: a later, separate build is at least the app's 2.5 s debounce (or the CLI's 30 s) away.
APP_BUILD_SLACK_MS: Final = 1_000.0

_MARKER_RE: Final = re.compile(r"__(.+)_canonical_transcript_v\d+__")


class Markers(NamedTuple):
    """The marker values that bear on the verdict."""

    last_build: float | None
    heartbeat: float | None
    heartbeat_present: bool
    app_success: float | None
    provider_sources: frozenset[str]


def read_markers(markers: Mapping[str, object]) -> Markers:
    """Marker values by key (from ``split_rows``) read into ``Markers``."""
    sources: set[str] = set()
    for key in markers:
        match = _MARKER_RE.fullmatch(key)
        if match:
            sources.add(match.group(1))
    return Markers(
        last_build=number(markers.get("__last_build__")),
        heartbeat=number(markers.get("__app_heartbeat__")),
        heartbeat_present="__app_heartbeat__" in markers,
        app_success=number(markers.get("__app_last_successful_build__")),
        provider_sources=frozenset(sources),
    )
