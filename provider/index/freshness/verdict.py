"""The verdict: the marker rows, its precedence (``decide_verdict``, the one place it lives), the
``FreshnessReport`` and its content-free public projection."""

from collections.abc import Mapping, Sequence
from typing import Final, Literal, NamedTuple

from ...contract.meta import UnknownReason
from .context import Ctx
from .scope import number
from .tally import Tally

Verdict = Literal["fresh", "stale", "incomplete", "unknown"]

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
    source one or more characters, none a newline; the digits any Unicode decimal digits), else None."""
    if len(key) < 4 or not (key.startswith("__") and key.endswith("__")):
        return None
    source, infix, version = key[2:-2].rpartition(_MARKER_INFIX)
    if not (infix and source and version.isdecimal()) or "\n" in source:
        return None
    return source


def read_markers(markers: Mapping[str, object]) -> Markers:
    """Marker values by key (``scope.split_rows``, or the caller's marker rows) read into ``Markers``."""
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


class FreshnessReport(NamedTuple):
    """The judgement for one scope. ``stale_units`` and ``unindexed_units`` are private paths."""

    verdict: Verdict
    units_in_scope: int
    up_to_date: int
    stale: int
    unindexed: int
    missing_on_disk: int
    unknown_cursor: int
    unreadable_units: int
    unattributed_files: int
    stale_units: tuple[str, ...]
    unindexed_units: tuple[str, ...]
    last_build_age_ms: float | None
    heartbeat_fresh: bool | None
    app_build_partial: bool
    missing_provider_markers: tuple[str, ...]
    lines_counted: int
    unknown_reasons: tuple[UnknownReason, ...]

    def to_public(self) -> dict[str, object]:
        """Content-free projection: counts, flags, ages, source names and reason codes. No paths."""
        return {
            "verdict": self.verdict,
            "units_in_scope": self.units_in_scope,
            "up_to_date": self.up_to_date,
            "stale": self.stale,
            "unindexed": self.unindexed,
            "missing_on_disk": self.missing_on_disk,
            "unknown_cursor": self.unknown_cursor,
            "unreadable_units": self.unreadable_units,
            "unattributed_files": self.unattributed_files,
            "last_build_age_ms": self.last_build_age_ms,
            "heartbeat_fresh": self.heartbeat_fresh,
            "app_build_partial": self.app_build_partial,
            "missing_provider_markers": list(self.missing_provider_markers),
            "lines_counted": self.lines_counted,
            "unknown_reasons": list(self.unknown_reasons),
        }


#: Reasons given when nothing in scope could be verified (added to ``unknown_reasons``).
NO_HOME: Final[UnknownReason] = "no_transcript_home"
ALL_GONE: Final[UnknownReason] = "every_in_scope_file_missing"
NONE_IN_SCOPE: Final[UnknownReason] = "no_transcript_in_scope"


def decide_verdict(
    *,
    judgeable: bool,
    unindexed: int,
    stale: int,
    app_build_partial: bool,
    missing_markers: bool,
    unknown: bool,
    nothing_verified: bool = False,
) -> Verdict:
    """The single statement of verdict precedence (package docstring).

    ``nothing_verified``: no unit of the scope was checked (none found, or the scope's index rows name files
    that are all gone); that is ``unknown`` (nothing was verified), never ``fresh``: an empty, "fresh" scope would
    read as "no history" where a wrong root or source, or history older than the window, is as likely.
    """
    if not judgeable or nothing_verified:
        return "unknown"
    if unindexed:
        return "incomplete"
    if stale or app_build_partial or missing_markers:
        return "stale"
    if unknown:
        return "unknown"
    return "fresh"


def build_report(
    ctx: Ctx, tally: Tally, markers: Markers, wanted: Sequence[str], *, now_ms: float, judgeable: bool
) -> FreshnessReport:
    """The report from the tally, the markers and the requested sources."""
    now = number(now_ms)
    last_build_age = None if now is None or markers.last_build is None else now - markers.last_build
    heartbeat_fresh = None
    if markers.heartbeat_present and now is not None and markers.heartbeat is not None:
        heartbeat_fresh = now - markers.heartbeat < HEARTBEAT_FRESH_MS
    partial = (
        markers.app_success is not None
        and markers.last_build is not None
        and markers.app_success < markers.last_build - APP_BUILD_SLACK_MS
    )
    missing = tuple(sorted(s for s in wanted if s not in markers.provider_sources))
    reasons = set(ctx.reasons)
    if not judgeable and not reasons & {"unreadable_root", "unsupported_source", "unreadable_home"}:
        reasons.add(NO_HOME)  # no transcript home was given or found: nothing could be checked
    nothing_verified = judgeable and tally.in_scope == 0
    if nothing_verified:
        reasons.add(ALL_GONE if tally.missing_on_disk else NONE_IN_SCOPE)
    verdict = decide_verdict(
        judgeable=judgeable,
        unindexed=len(tally.unindexed),
        stale=len(tally.stale),
        app_build_partial=partial,
        missing_markers=bool(missing),
        unknown=bool(reasons),
        nothing_verified=nothing_verified,
    )
    return FreshnessReport(
        verdict=verdict,
        units_in_scope=tally.in_scope,
        up_to_date=tally.up_to_date,
        stale=len(tally.stale),
        unindexed=len(tally.unindexed),
        missing_on_disk=tally.missing_on_disk,
        unknown_cursor=tally.unknown_cursor,
        unreadable_units=tally.unreadable,
        unattributed_files=tally.unattributed,
        stale_units=tuple(sorted(tally.stale)),
        unindexed_units=tuple(sorted(tally.unindexed)),
        last_build_age_ms=last_build_age,
        heartbeat_fresh=heartbeat_fresh,
        app_build_partial=partial,
        missing_provider_markers=missing,
        lines_counted=ctx.lines_counted,
        unknown_reasons=tuple(sorted(reasons)),
    )
