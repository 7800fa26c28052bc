"""Stage 0 qualification (RFC v0 §9-§10): a matched replan corpus, three arms, metrics, promotion criteria.

The corpus is generated with the project's own fixture code (:func:`provider.fixtures.builder.build_fixture`):
same-repository histories with known dead ends, decisions, tool outcomes and file edits, filler sessions as
distractors, and three variants of the same index:

* ``base``: as built (expected freshness ``fresh``);
* ``stale``: one in-scope transcript per scope gains a line *after* the build (expected ``stale``);
* ``incomplete``: one in-scope ``index_state`` row per scope is deleted (expected ``incomplete``).

Every case is a replan question asked under three arms (RFC §10):

* ``current_context``: only the current LoopX context, no history. Nothing is recognised, by construction,
  and no history enters the context (0 characters);
* ``provider``: the typed, admitted request through :func:`provider.service.answer` in-process, and a few
  through a real ``python -m obelisk_session_evidence query`` subprocess, which must agree with the in-process answers;
* ``native_ceiling``: full native history as the cost ceiling, an Obelisk-style search written here with
  plain read-only apsw queries: the top 20 whole messages by bm25 for the raw terms (OR of quoted phrases)
  with 6 neighbouring messages each (3 before, 3 after, same session), filtered by nothing but the
  repository's project paths (no agent, source, visibility or recency filter).

Case kinds: ``dead_end`` (a known failed route the agent is about to repeat: recognised or not),
``same_route`` (a command, file or choice walked before), ``negative`` (matched negatives: terms that occur
only in other agents' or other repositories' sessions, checked against the corpus itself), ``cross_scope``
(requests for other agents, projects or repositories, or with cross-scope flags: must be rejected),
``unknown_option`` (requests with fields the contract does not define: must be rejected) and ``freshness``
(the same question on the three variants).

The report (JSON and Markdown, one per qualified scope, plus a summary) holds counts, rates, sizes and
latencies only: no snippet, term or path of the corpus. ``passed`` is true when every Stage 0 criterion
passes; criteria that need live agent runs (task success, time to a grounded successor) are reported as
``not_measured`` and belong to the Stage 3 decision. A passing per-scope report is what
``enable --stage 2 --qualification-report FILE`` accepts.

The package, one concern a module:

* :mod:`~provider.qualify.scopes`: the scope a report is issued for, the fixture histories standing in for it;
* :mod:`~provider.qualify.corpus`: the fixture builds, their facts, the ``stale`` and ``incomplete`` changes;
* :mod:`~provider.qualify.cases`: the questions and requests of every case kind;
* :mod:`~provider.qualify.arms`: the Obelisk-style native ceiling and the provider arm;
* :mod:`~provider.qualify.metrics` (with :mod:`~provider.qualify.stats`): per-arm metrics and per-case rows;
* :mod:`~provider.qualify.criteria`: the RFC §10 criteria and their thresholds;
* :mod:`~provider.qualify.report`: digests, report files and their Markdown;
* :mod:`~provider.qualify.run`: the run over every scope and the ``qualify`` command.
"""

from __future__ import annotations

from .arms import NativeResult, native_search, open_native
from .report import render_markdown
from .run import qualify_command, run_qualification
from .scopes import QualifyScope, default_scopes, operator_scope

__all__ = [
    "NativeResult",
    "QualifyScope",
    "default_scopes",
    "native_search",
    "open_native",
    "operator_scope",
    "qualify_command",
    "render_markdown",
    "run_qualification",
]
