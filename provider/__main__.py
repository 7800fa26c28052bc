"""``python -m obelisk_session_evidence`` is the same as the ``obelisk-session-evidence`` console script."""

from .cli import run

raise SystemExit(run())
