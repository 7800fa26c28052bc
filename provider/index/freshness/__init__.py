"""Is the Obelisk index fresh for a scope? An outside reader's judgement over ``index_state`` and the transcripts
on disk (``fresh | stale | incomplete | unknown``); the rules, the modules and what the judgement cannot see are
in this package's README.

The caller reads ``index_state`` inside its read transaction and passes the rows in; this package looks only at
the transcript files, never at the database. A request uses :func:`assess_scoped_freshness`; ``status`` uses
:func:`assess_freshness`, which walks every transcript.
"""

from .assess import assess_freshness, assess_scoped_freshness
from .memo import TranscriptMemo
from .scope import SUPPORTED_SOURCES
from .verdict import APP_BUILD_SLACK_MS, HEARTBEAT_FRESH_MS, FreshnessReport, Verdict

__all__ = [
    "APP_BUILD_SLACK_MS",
    "HEARTBEAT_FRESH_MS",
    "SUPPORTED_SOURCES",
    "FreshnessReport",
    "TranscriptMemo",
    "Verdict",
    "assess_freshness",
    "assess_scoped_freshness",
]
