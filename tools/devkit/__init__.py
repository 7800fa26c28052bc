"""Development code the tools and the tests share; it is not part of the wheel.

* ``evaluation`` — ``tools/evaluate``: situations with required facts, run through ``service.answer``, scored;
* ``corpus`` — the evaluation corpus and the held-out set (Claude Code and Codex sessions, with situations);
* ``large`` — :func:`~tools.devkit.large.build_large`, the benchmark-scale database;
* ``home_db`` — any list of finished transcripts written as an Obelisk home and its index;
* ``replay_fixture`` — the history ``qualify --replay`` is measured on (``tools/replay-measure``, tests).

Imported as ``tools.devkit`` with the repository root on ``sys.path`` (``python -m pytest`` and every
script in ``tools/`` put it there); it imports the installed package ``obelisk_session_evidence``.
"""
