"""The shipped verdicts: ``sql_templates/verified.json`` names the template digests sqlglot verified.

``tools/verify-templates`` writes it (and ``--check``, run by the test suite, proves it current): every template
passes the rules of this package, and the manifest records the digest of those rules. At run time a template
whose digest the manifest lists needs no sqlglot; any other template is verified in memory, or refused.
The run-time reader is ``templates.catalog.shipped_digests`` (it needs neither sqlglot nor this package);
this module makes the document and the digest of the rules. Nothing is ever written at run time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..catalog import MANIFEST_FORMAT

#: Bump when the rules change in a way the verifier's own source digest would not show.
RULESET_VERSION = 1


def verifier_digest() -> str:
    """The ruleset version and the digest of every module of this package (sorted by name)."""
    digest = hashlib.sha256(f"ruleset {RULESET_VERSION}\0".encode())
    for path in sorted(Path(__file__).parent.glob("*.py"), key=lambda p: p.name):
        digest.update(path.name.encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return "sha256:" + digest.hexdigest()


def manifest_for(templates: Sequence[tuple[str, str]], *, sqlglot_version: str) -> dict[str, Any]:
    """The manifest document for ``(filename, digest)`` pairs that all passed verification."""
    return {
        "format": MANIFEST_FORMAT,
        "verifier": verifier_digest(),
        "sqlglot": sqlglot_version,
        "templates": dict(sorted(templates)),
    }
