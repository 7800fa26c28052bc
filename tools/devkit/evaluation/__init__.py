"""Evaluation of retrieval quality: situations with required facts, run through the service, scored.

Not on the query path: nothing in ``service``/``cli`` imports this package.

* ``situation`` — :class:`Situation`, :class:`Fact`, :class:`ScopeSpec`, :class:`EvalSet`;
* ``runner`` — answers every situation in-process and scores it;
* ``report`` — figures, the Markdown table and the verdict;
* ``formats`` — the ``real-obelisk-formats`` set (extraction under a lock, facts as situations);
* ``main`` — ``tools/evaluate``.

The evaluation corpus itself is built by ``fixtures.corpus``.
"""
