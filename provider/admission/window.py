"""The time window searched: since the revision's merge-base (minus slack) when resolvable, else recency.

Resolving a revision runs ``git`` in a bound root with a short timeout; the revision string is request
content, so it is checked against a strict pattern and passed after ``--end-of-options``. Nothing from git's
output or errors is ever echoed.
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime

from .admit import AdmittedRequest
from .config import ProviderConfig

_GIT_TIMEOUT_S = 1.0
#: The bound's format: the second, as the index's ISO-8601 timestamps compare with it.
_ISO_SECOND = "%Y-%m-%dT%H:%M:%S.000Z"


@functools.cache
def _rev_pattern() -> re.Pattern[str]:
    """The revision strings passed to git (compiled on first use: only a request with a revision needs it)."""
    return re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/@^~{}-]{0,199}$")


def _iso(epoch_s: float) -> str:
    """The UTC second of ``epoch_s`` (rounded to microseconds first, so 0.9999996 s is the next second);
    ``ValueError``, ``OverflowError`` or ``OSError`` past the year 9999."""
    return datetime.fromtimestamp(epoch_s, tz=UTC).strftime(_ISO_SECOND)


def commit_time(root: str, revision: str) -> float | None:
    """Committer time of ``revision`` in the repository at ``root``, or None when it cannot be resolved."""
    if not _rev_pattern().match(revision) or ".." in revision:
        return None
    import subprocess  # heavy (signal, selectors, threading): only a request with a revision runs git

    try:
        done = subprocess.run(
            ["git", "-C", root, "show", "-s", "--format=%ct", "--end-of-options", revision, "--"],
            capture_output=True, timeout=_GIT_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = done.stdout.decode("ascii", "replace").strip().splitlines()
    if done.returncode != 0 or not text or not text[0].isdigit():
        return None
    return float(text[0])


def since_for(admitted: AdmittedRequest, config: ProviderConfig, now_s: float) -> str:
    """ISO-8601 lower bound on session activity for this request. A commit dated past the year 9999 (git
    takes any date a repository holds) gives no bound: the recency window applies, as for an unresolvable
    revision."""
    revision = admitted.request.revision
    if revision is not None:
        wanted = revision.merge_base or revision.current
        for root in admitted.scope.roots:
            when = commit_time(root, wanted)
            if when is not None:
                try:
                    return _iso(when - config.revision_slack_days * 86400)
                except (ValueError, OverflowError, OSError):
                    continue
    return _iso(now_s - config.recency_days * 86400)
