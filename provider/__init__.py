"""obelisk-session-evidence: a read-only, scoped, bounded historical-evidence provider over Obelisk.

The public surface is small: :func:`answer` (request bytes in, response envelope out), the :class:`WarmState`
a caller answering many requests passes to it, and the CLI.
"""

from ._version import CONTRACT_VERSION, PROVIDER_VERSION

__all__ = ["CONTRACT_VERSION", "PROVIDER_VERSION", "WarmState", "answer"]


def __getattr__(name: str) -> object:
    # Imported on first use: ``answer`` loads the whole request path, which no other command needs.
    if name in ("answer", "WarmState"):
        from . import service

        return getattr(service, name)
    raise AttributeError(name)
