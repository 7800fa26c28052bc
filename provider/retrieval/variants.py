"""Other spellings of a query term that name the same thing: English inflections and spacing, matched as words.

A term of plain words (ASCII letters and spaces) names words, so it matches only whole words: ``test`` is found
in ``tests/test_cart.py`` and ``npm test`` but never inside ``latest``, ``contests`` or ``testament``. Its last
word, when typed in lower case and at least :data:`MIN_WORD` letters long, also matches its inflections and the
noun or verb beside it (:func:`word_forms`): ``deploy`` finds ``deployed``, ``deploying``, ``deployment``;
``retry`` finds ``retries``, ``retried``; ``migrate`` finds ``migration``. A phrase of two words also matches
joined (``rate limit``: ``ratelimit``, ``ratelimited``); hyphens and underscores are read as spaces where the
text is matched (``rate-limited``). The morphology is a small set of suffix rules, never a stemmer: every form is
a whole word, so a form that is no English word matches nothing, and the few real words a rule would make of
another word (``state`` and ``statement``) are left out (:data:`NOT_FORMS`).

The forms reach FTS5 as exact phrases (``"deployment"``, never a prefix that would find ``deployability``). For
``instr`` matching in SQL, which finds substrings, only the few strings that cover every form are added
(:func:`covering`: ``deploy`` covers all its forms, ``retri`` is added for ``retried``); Python then keeps a
row only when a form occurs in it as a whole word (:func:`holds_word`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

#: Letters a word needs for its forms to be added (``run``, ``try`` and ``fix`` have none).
MIN_WORD = 4
#: Forms one term gets at most (the request's FTS expression stays small).
MAX_FORMS = 24
_VOWELS = frozenset("aeiou")
_PLAIN = re.compile(r"[A-Za-z]+(?: [A-Za-z]+)*")
#: Real words a suffix rule would make of another word; never forms of it (nor stripped back to it).
NOT_FORMS = frozenset({
    "statement", "statements", "basement", "basements", "installment", "installments", "department", "apartment",
    "compartment", "garment", "element", "moment", "comment", "comments", "document", "documents", "segment",
    "station", "stations", "ration", "rations", "nation", "formation", "sensation", "cation", "mention",
    "lotion", "motion", "potion", "portion", "notion", "version", "versions", "session", "sessions",
})


def is_plain(term: str) -> bool:
    """Whether ``term`` is plain words (ASCII letters and single spaces): it names words, matched whole."""
    return _PLAIN.fullmatch(term) is not None


def _double(stem: str) -> bool:
    """Whether a verb ending consonant-vowel-consonant doubles its last letter (``stop``: ``stopped``)."""
    return (len(stem) >= 3 and stem[-1] not in _VOWELS and stem[-1] not in "wxy" and stem[-2] in _VOWELS
            and stem[-3] not in _VOWELS)


def _bases(word: str) -> set[str]:
    """The words ``word`` may be a form of (itself included): suffixes taken off, a dropped ``e`` put back."""
    bases = {word}
    if word in NOT_FORMS:
        return bases
    if word.endswith("ies"):
        bases.add(word[:-3] + "y")
    elif word.endswith("es") and word[:-2].endswith(("s", "x", "z", "ch", "sh")):
        bases.add(word[:-2])
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        bases.add(word[:-1])
    for suffix in ("ied",):
        if word.endswith(suffix):
            bases.add(word[:-3] + "y")
    for suffix in ("ed", "ing"):
        if word.endswith(suffix) and not word.endswith("ied"):
            stem = word[: -len(suffix)]
            bases.update({stem, stem + "e"})
            if len(stem) >= 2 and stem[-1] == stem[-2]:
                bases.add(stem[:-1])
    for suffix in ("ments", "ment"):
        if word.endswith(suffix):
            bases.add(word[: -len(suffix)])
            break
    for suffix in ("ations", "ation"):
        if word.endswith(suffix):
            bases.update({word[: -len(suffix)], word[: -len(suffix)] + "e", word[: -len(suffix)] + "ate"})
            break
    else:
        for suffix in ("ions", "ion"):
            if word.endswith(suffix):
                bases.add(word[: -len(suffix)] + "e")
                break
    return {b for b in bases if len(b) >= 3}


def word_bases(word: str) -> frozenset[str]:
    """The words a lower-case ``word`` may be a form of, itself included (``retries``: ``retry``): two words name
    the same thing when their bases meet. Only ``word`` when it is not lower-case ASCII letters."""
    if not (word.isascii() and word.isalpha() and word.islower()):
        return frozenset((word,))
    return frozenset(_bases(word) | {word})


def _inflections(base: str) -> list[str]:
    """A base word and its inflections: plural or third person, past, gerund (a final consonant doubled too)."""
    forms = [base]
    if base.endswith("y") and len(base) > 1 and base[-2] not in _VOWELS:
        forms += [base[:-1] + "ies", base[:-1] + "ied"]
    elif base.endswith(("s", "x", "z", "ch", "sh")):
        forms += [base + "es", base + "ed"]
    elif base.endswith("e"):
        forms += [base + "s", base + "d"]
    else:
        forms += [base + "s", base + "ed"]
    forms.append((base[:-1] if base.endswith("e") and not base.endswith("ee") else base) + "ing")
    if _double(base):
        forms += [base + base[-1] + "ed", base + base[-1] + "ing"]
    return forms


def _derivations(base: str) -> list[str]:
    """The nouns beside a verb: ``-ment``, ``-ation`` (``install``: ``installation``), and ``-ate`` made ``-ion``
    (``migrate``: ``migration``)."""
    forms = [base + "ment", base + "ments"]
    if base.endswith("ate"):
        return forms + ([base[:-1] + "ion", base[:-1] + "ions"] if len(base) >= 6 else [])
    stem = base[:-1] if base.endswith("e") else base
    return [*forms, stem + "ation", stem + "ations"]


def word_forms(word: str) -> tuple[str, ...]:
    """``word`` (lower case) and its forms, ``word`` first: the inflections of its base words (``word`` itself
    when nothing strips off it), then the nouns beside them; at most :data:`MAX_FORMS`. Only ``word`` when it is
    shorter than :data:`MIN_WORD` letters or not lower-case ASCII letters."""
    if len(word) < MIN_WORD or not (word.isascii() and word.isalpha() and word.islower()):
        return (word,)
    bases = sorted(_bases(word) - {word}, key=lambda b: (-len(b), b)) or [word]
    out: dict[str, None] = {word: None}
    for make in (_inflections, _derivations):
        for base in bases:
            for form in make(base):
                if form not in NOT_FORMS:
                    out[form] = None
    return tuple(out)[:MAX_FORMS]


def term_forms(term: str) -> tuple[str, ...]:
    """The whole-word forms of a plain ``term`` as typed (its last word inflected; a phrase of two words also
    joined), lower case, the term itself first. A term that is not plain has none (only itself, lower case)."""
    lowered = term.lower()
    if not is_plain(term):
        return (lowered,)
    words = lowered.split(" ")
    typed_last = term.rsplit(" ", maxsplit=1)[-1]
    last = word_forms(words[-1]) if typed_last.islower() else (words[-1],)
    head = " ".join(words[:-1])
    out: dict[str, None] = {lowered: None}
    for form in last:
        out[f"{head} {form}" if head else form] = None
    if len(words) == 2 and typed_last.islower() and min(len(w) for w in words) >= MIN_WORD:
        for form in word_forms(words[0] + words[1]):
            out[form] = None
    return tuple(out)[:MAX_FORMS]


def covering(forms: Iterable[str], already: Sequence[str]) -> tuple[str, ...]:
    """The fewest strings, each a form or the longest prefix two forms share, whose substrings cover every form
    not already covered by a string of ``already``: what ``instr`` must look for so that SQL returns every row a
    form occurs in (Python then decides by whole words)."""
    left = [f for f in dict.fromkeys(forms) if not any(a and a in f for a in already)]
    chosen: list[str] = []
    for form in sorted(left, key=len):
        if any(c in form for c in chosen):
            continue
        shared = [other for other in left if other != form and other[:len(form) - 1] == form[:-1]]
        prefix = form[:-1] if shared and len(form) - 1 >= MIN_WORD else form
        if prefix.endswith(" "):
            prefix = form
        chosen.append(prefix)
    return tuple(chosen)


#: What may stand between the words of a phrase in recorded text: spaces, line breaks, hyphens, underscores, and
#: the punctuation of a command stored as JSON (``"npm","run","build"``).
_GAPS = frozenset(" \t\n\r-_\",:;")


def _word_char(ch: str) -> bool:
    return ch.isalnum()


def holds_word(text: str, lowered: str, form: str, *, variant: bool = False) -> bool:
    """Whether ``form`` (lower case; words joined by single spaces) occurs in ``text`` as a whole word: each word
    gap may be any run of :data:`_GAPS`, and the match is bounded on both sides by
    a character that is no letter or digit, or by a change from a lower- to an upper-case letter (``retryCount``
    holds ``retry``). ``lowered`` is ``text`` lower-cased (ASCII), the same length.

    A ``variant`` (another spelling of the term, not the term as asked) must stand as a word of prose: never a
    piece of a path, file name or identifier (:func:`_in_name`), so ``webhook`` finds "webhooks" but never
    ``src/billing/webhooks.py`` or ``retriesLeft`` (the term itself still finds ``src/billing/webhook.py``)."""
    words = form.split(" ")
    first = words[0]
    start = lowered.find(first)
    while start >= 0:
        end = _rest(lowered, start + len(first), words[1:])
        if end is not None and _bounded(text, start, end) and not (variant and _in_name(text, start, end)):
            return True
        start = lowered.find(first, start + 1)
    return False


#: Characters that join the pieces of a path or an identifier: a word beside one is part of a name.
_NAME_JOINERS = frozenset("/\\_")
#: Characters that join pieces of a name only when a letter or digit follows (``webhooks.py``, ``a-b``, ``x:y``);
#: before a space or at the end they close a sentence or a clause.
_NAME_JOINERS_BEFORE_WORD = frozenset(".-:")


def _in_name(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is a piece of a path, file name or identifier: joined to what stands before or
    after it by a path or identifier character, or by a change of case (``retriesLeft``, ``autoRetries``)."""
    before = text[start - 1] if start > 0 else ""
    after = text[end] if end < len(text) else ""
    following = text[end + 1] if end + 1 < len(text) else ""
    if before and (before in _NAME_JOINERS or before in _NAME_JOINERS_BEFORE_WORD or before.isalnum()):
        return True
    if after and (after in _NAME_JOINERS or after.isalnum()):
        return True
    return after in _NAME_JOINERS_BEFORE_WORD and following.isalnum()


def _rest(lowered: str, at: int, words: Sequence[str]) -> int | None:
    """Where the words after the first end, each after a gap of separators; None when they do not follow."""
    for word in words:
        gap = at
        while gap < len(lowered) and lowered[gap] in _GAPS:
            gap += 1
        if gap == at or not lowered.startswith(word, gap):
            return None
        at = gap + len(word)
    return at


def _bounded(text: str, start: int, end: int) -> bool:
    before = text[start - 1] if start > 0 else ""
    after = text[end] if end < len(text) else ""
    left = not before or not _word_char(before) or (before.islower() and text[start].isupper())
    right = not after or not _word_char(after) or (text[end - 1].islower() and after.isupper())
    return left and right
