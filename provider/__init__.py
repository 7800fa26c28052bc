"""obelisk-session-evidence: a read-only, scoped, bounded historical-evidence provider over Obelisk.

The public surface is small: :func:`answer` (request bytes in, response envelope out) and the CLI.
"""

from ._version import CONTRACT_VERSION, PROVIDER_VERSION

__all__ = ["CONTRACT_VERSION", "PROVIDER_VERSION", "answer"]


def __getattr__(name: str) -> object:
    # Lazy: importing the package must not import pydantic/apsw (cold start).
    if name == "answer":
        from .service import answer

        return answer
    raise AttributeError(name)
