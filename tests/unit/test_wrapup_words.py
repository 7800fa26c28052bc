"""A session's last words are about a term only where the term stands outside a file path
(``retrieval.wrapups``): a path names where the session worked, not what it concluded."""

from __future__ import annotations

import pytest
from obelisk_session_evidence.retrieval.wrapups import names_outside_paths


@pytest.mark.parametrize(("text", "terms", "about"), [
    ("The billing tests pass again.", ["billing"], True),
    ("Renamed a variable in src/billing/refunds.py so it reads better.", ["billing"], False),
    ("Edited `src/billing/tax.py`; the billing totals now round once.", ["billing"], True),
    ("Done! I've deleted hello.js.", ["hello.js"], True),
    ("Moved it to src/billing/tax.py.", ["src/billing/tax.py"], True),
    ("Moved it to src/billing/tax.py.", ["tax.py"], True),
    ("The retry budget is raised to 5.", ["retry budget"], True),
    ("Paused: the mkpauseexport job needs the key.", ["MKPAUSEEXPORT".lower()], True),
    ("See ./billing/README for the billing-less path.", ["billing"], True),
    ("See ./billing/README.", ["billing"], False),
    ("Nothing about it.", ["billing"], False),
    ("", ["billing"], False),
    ("The billing tests pass.", [""], False),
])
def test_a_term_counts_outside_a_path_only(text: str, terms: list[str], about: bool) -> None:
    assert names_outside_paths(text, terms) is about
