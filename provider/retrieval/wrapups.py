"""Whether a session's last words are about the terms asked (``summary.wrapups``), beyond what SQL can say.

The template finds the session's last assistant prose holding every term. A term met only inside a file path
(``src/billing/tax.py`` for ``billing``) names where the session worked, not what it concluded about the term,
so such a message is no wrap-up for it: the edit itself is ``file_history`` evidence. A term that is itself a
path or a file name (it holds ``/`` or ``.``) counts wherever it stands. Case folds as SQLite's ``lower()``.
"""

import re
from collections.abc import Sequence

from .terms import ascii_lower

_TOKEN = re.compile(r"[^\s`'\"()\[\]{}<>,;]+")


def names_outside_paths(text: str, terms: Sequence[str]) -> bool:
    """True when some term (an ``instr`` variant, lower-cased) occurs in ``text`` other than inside a path token."""
    lowered = ascii_lower(text)
    for term in terms:
        if not term:
            continue
        if "/" in term or "." in term or " " in term:  # a path or file name, or a phrase (prose): anywhere
            if term in lowered:
                return True
            continue
        if any(term in token and "/" not in token for token in _TOKEN.findall(lowered)):
            return True
    return False
