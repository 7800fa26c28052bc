"""Stage 0 on the scope's own history (issue 14): mine repeat pairs and matched negatives from the scope's
indexed sessions (:mod:`.signature`, :mod:`.mine`), replay each as the request LoopX would have sent with the
index cut before the later session (:mod:`.run`, the templates' ``:until``), measure the RFC §10 metrics
(:mod:`.metrics`) and write the reports (:mod:`.report`)."""

from __future__ import annotations

from .document import REPLAY_FORMAT
from .metrics import MIN_PAIRS
from .mine import History, Negative, Pair, mine, read_history
from .report import render_markdown, run_replay, scope_digest, write_replay_reports
from .run import ScopeRef

__all__ = ["MIN_PAIRS", "REPLAY_FORMAT", "History", "Negative", "Pair", "ScopeRef", "mine", "read_history",
           "render_markdown", "run_replay", "scope_digest", "write_replay_reports"]
