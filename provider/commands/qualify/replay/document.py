"""The replay report's format name, shared by ``qualify --replay`` and ``enable --stage 2`` (this module imports
nothing, so ``enable`` stays light). The report's scope digest is the receipts' keyed scope digest
(``provider/digest.py``: ``scope_basis`` under the install's key), which ``enable --stage 2`` recomputes."""

from __future__ import annotations

from typing import Final

REPLAY_FORMAT: Final = "obelisk-session-evidence/replay-qualification/1"
