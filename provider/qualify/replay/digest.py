"""The scope digest a replay report is issued for, and the report format: shared by ``qualify --replay`` and
``enable --stage 2`` (this module imports nothing heavy, so ``enable`` stays light).

The digest is plain sha256 over the canonical scope (agent, project, repository, sorted sources, sorted
normalised roots). The keyed digest of the hardening branch (``provider/digest.py``) replaces it once merged.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Final

REPLAY_FORMAT: Final = "obelisk-session-evidence/replay-qualification/1"


def scope_digest(agent_id: str, project_id: str, repository_id: str, sources: Sequence[str],
                 roots: Sequence[str]) -> str:
    canonical = json.dumps([agent_id, project_id, repository_id, sorted(sources),
                            sorted(r.rstrip("/") or "/" for r in roots)])
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
