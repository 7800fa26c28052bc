"""Query terms are data: normalise them, then quote each as an FTS5 string so no syntax reaches MATCH.

* NFKC-normalise (full-width operators become ASCII and are then quoted like any other character), strip NUL
  and every other control character, collapse whitespace.
* Each term becomes one FTS5 phrase: ``"…"`` with internal quotes doubled. Inside a string no operator,
  column filter, NEAR, ``*`` or ``^`` has meaning. Terms that tokenize to nothing under the live tokenizer are
  dropped (alone they match nothing; inside AND they are silently ignored).
* Under ``trigram``, phrases shorter than three characters emit no tokens: they are kept out of MATCH and
  applied as a disclosed post-filter (``instr`` scoring). Under ``unicode61`` a CJK run is one token, so a CJK
  term is matched as a prefix phrase (``"数据库"*``), which still misses a term in the middle of a run: that
  degradation is disclosed too. Non-FTS templates match every term by substring, CJK included.
"""

import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from ..contract.meta import Degradation
from ..errors import InvalidQueryTerms

Tokenize = Callable[[str], Sequence[str]]

#: The control and invisible characters :func:`normalise` makes spaces, by code point ranges (inclusive): C0, DEL
#: and C1, zero-width and direction marks, line/paragraph separators and embeddings, word joiners, the BOM.
#: A ``str.translate`` table: a character class that reaches past Latin-1 is slow to compile.
CONTROL_RANGES = ((0x00, 0x1F), (0x7F, 0x9F), (0x200B, 0x200F), (0x2028, 0x202E), (0x2060, 0x2064), (0xFEFF, 0xFEFF))
_CONTROL_TO_SPACE = {code: " " for lo, hi in CONTROL_RANGES for code in range(lo, hi + 1)}
_SPACE = re.compile(r"\s+")
#: Kana, CJK extension A, CJK unified ideographs, Hangul syllables, CJK compatibility ideographs (inclusive).
CJK_RANGES = (("\u3040", "\u30ff"), ("\u3400", "\u4dbf"), ("\u4e00", "\u9fff"), ("\uac00", "\ud7af"),
              ("\uf900", "\ufaff"))


def has_cjk(text: str) -> bool:
    """True when ``text`` holds a character of :data:`CJK_RANGES` (compared directly: a character class this
    wide is slow to compile)."""
    if text.isascii():
        return False
    return any(lo <= ch <= hi for ch in text if ch >= "\u3040" for lo, hi in CJK_RANGES)

#: Words that mark a failure narration and a decision, as FTS5 strings (prefix form where the tokenizer
#: supports it). They are constants of the provider, never request text.
FAILURE_WORDS = ("fail", "error", "traceback", "exception", "crash", "broke", "refused", "denied", "cannot")
DECISION_WORDS = ("decid", "chose", "choos", "instead", "abandon", "revert", "because", "favour", "favor",
                  "replac", "switch", "drop", "rather", "went with", "settled", "for now", "until",
                  "workaround", "defer", "postpone", "go with", "going with", "from now on", "decision", "prefer",
                  "opt", "let's", "i'll", "we'll", "should use", "move to", "moving to")


def ascii_lower(text: str) -> str:
    """Lower-case ASCII letters only, exactly as SQLite's ``lower()`` does."""
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def normalise(term: str) -> str:
    text = unicodedata.normalize("NFKC", term)
    text = text.translate(_CONTROL_TO_SPACE)
    return _SPACE.sub(" ", text).strip()


def fts_string(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


class PreparedTerms(NamedTuple):
    """The request's terms after normalisation, ready for binding."""

    terms: tuple[str, ...]                 # normalised, de-duplicated, in request order
    instr_terms: tuple[str, ...]           # lower-cased for instr() scoring (SQLite lower semantics)
    fts_terms: tuple[str, ...]             # FTS5 strings that reach MATCH
    post_filter_terms: tuple[str, ...]     # short terms under trigram, applied by instr only
    degradations: tuple[Degradation, ...] = ()

    def fts_any(self) -> str | None:
        return " OR ".join(self.fts_terms) if self.fts_terms else None


def prepare_terms(raw_terms: Sequence[str], *, tokenizer: str, tokenize: Tokenize) -> PreparedTerms:
    """Normalise and quote terms for the live tokenizer; raise if nothing usable remains."""
    seen: dict[str, None] = {}
    for raw in raw_terms:
        term = normalise(raw)
        if term and ascii_lower(term) not in {ascii_lower(t) for t in seen}:
            seen[term] = None
    terms = tuple(seen)
    fts: list[str] = []
    short: list[str] = []
    usable: list[str] = []
    degradations: set[Degradation] = set()
    for term in terms:
        if tokenizer == "trigram" and len(term) < 3:
            # Trigram emits no token for fewer than three characters: keep the term out of MATCH and
            # apply it as a disclosed instr() post-filter instead.
            if any(ch.isalnum() for ch in term):
                short.append(term)
                usable.append(term)
                degradations.add("trigram_short_term_post_filter")
            continue
        if tokenizer != "trigram" and has_cjk(term):
            fts.append(fts_string(term) + "*")
            usable.append(term)
            degradations.add("cjk_prefix_match")
            continue
        if not tokenize(term):
            continue  # tokenizes to nothing: would match nothing alone and be ignored inside AND
        fts.append(fts_string(term))
        usable.append(term)
    if not usable:
        raise InvalidQueryTerms("query terms reduce to nothing searchable")
    return PreparedTerms(
        terms=terms,
        instr_terms=tuple(ascii_lower(t) for t in usable),
        fts_terms=tuple(fts),
        post_filter_terms=tuple(short),
        degradations=tuple(sorted(degradations)),
    )


def marker_expression(words: Sequence[str], tokenizer: str) -> str:
    """An FTS5 OR-group of the provider's own marker words (prefix form unless trigram)."""
    parts = []
    for word in words:
        quoted = fts_string(word)
        parts.append(quoted if tokenizer == "trigram" or " " in word else quoted + "*")
    return " OR ".join(parts)


def combined_expression(terms: PreparedTerms, words: Sequence[str], tokenizer: str) -> str | None:
    """``(term OR term …) AND (marker OR marker …)`` (the terms alone when there are no marker words), or
    None when no term can reach MATCH."""
    anyterm = terms.fts_any()
    if anyterm is None:
        return None
    if not words:
        return f"({anyterm})"
    return f"({anyterm}) AND ({marker_expression(words, tokenizer)})"


#: Separators a phrase may be written with between its words in recorded text: punctuation, and the argv of a
#: command stored as JSON (``["npm","run","build"]``). The tool templates also read line breaks, tabs, hyphens
#: and underscores in outputs as spaces, and :func:`loose` gives the term in that form.
_PHRASE_SEPARATORS = ('","', "\n", "-", "_", ": ", ", ", ". ", "; ", "  ")
_LOOSE = re.compile(r"[-_\s]+")


def loose(text: str) -> str:
    """``text`` with line breaks, tabs, hyphens and underscores read as single spaces (as the tool templates
    read outputs), lower-cased the SQLite way."""
    return _LOOSE.sub(" ", ascii_lower(text))
_VARIANTS_PER_TERM = 16


def match_variants(instr_terms: Sequence[str], roots: Sequence[str]) -> tuple[str, ...]:
    """The lower-cased strings a row may hold for the terms, for ``instr`` matching outside FTS.

    * A phrase matches across punctuation and line breaks: each word gap may be any one separator above, and
      the :func:`loose` form matches outputs whose gaps mix line breaks, hyphens and underscores.
    * A path term matches both spellings: an absolute path under a bound root also as the repository-relative
      path, and ``./x`` also as ``x`` (a relative path is already a substring of the absolute one).
    * A term with a double quote or a backslash also matches as JSON writes it (``\\"``, ``\\\\``): a command
      stored in a tool call's ``input_json`` (``sed -n "1,80p" app.py``) holds them escaped.
    """
    out: dict[str, None] = {}
    lowered_roots = [ascii_lower(r.rstrip("/")) for r in roots if r.rstrip("/")]
    for term in instr_terms:
        variants = [term]
        escaped = json.dumps(term, ensure_ascii=False)[1:-1]
        if escaped != term:
            variants.append(escaped)
        if loose(term) != term:
            variants.append(loose(term))
        words = term.split(" ")
        if len(words) > 1:
            variants.extend(sep.join(words) for sep in _PHRASE_SEPARATORS)
        for root in lowered_roots:
            if term.startswith(root + "/") and len(term) > len(root) + 1:
                variants.append(term[len(root) + 1:])
        if term.startswith("./") and len(term) > 2:
            variants.append(term[2:])
        for variant in variants[:_VARIANTS_PER_TERM]:
            out[variant] = None
    return tuple(out)


#: Cue words matched by substring (``instr``) where FTS cannot segment the text: lower-case, English, Chinese
#: and Japanese. They are constants of the provider, never request text.
FAILURE_CUES = (
    "fail", "error", "traceback", "exception", "crash", "refused", "denied", "cannot", "timed out",
    "失败", "错误", "报错", "异常", "拒绝", "超时", "无法", "崩溃", "原因", "导致", "耗尽", "不够", "卡住",
    "失敗", "エラー", "例外", "拒否", "タイムアウト", "できません", "止まる", "止まり", "落ちる", "原因",
    "问题", "問題", "不了", "されない",
)
DECISION_CUES = (
    "decid", "chose", "choos", "instead", "abandon", "revert", "because", "switch", "rather", "went with",
    "决定", "选择", "改成", "改为", "换成", "而不是", "放弃", "因为", "采用", "原因",
    "決定", "選択", "代わりに", "切り替え", "やめ", "ため", "採用", "原因", "修正しました", "直しました",
)


def unsegmented(terms: Sequence[str]) -> tuple[str, ...]:
    """The terms FTS under unicode61 cannot find inside a longer run (those holding CJK characters)."""
    return tuple(t for t in terms if has_cjk(t))

#: What a later message says when a failure was resolved: the cause or the fix stated, or what was missing
#: supplied (a credential, a permission, a package), by the agent or by the user.
RESOLUTION_CUES = (
    "root cause", "the cause", "the fix", "fixed", "now passes", "passes now", "now pass", "works now",
    "now works", "i added", "i've added", "i have added", "switched to", "switching to", "the problem was",
    "the issue was", "turned out", "resolved", "granted", "regenerated", "installed", "i set ", "i've set",
    "please retry", "try again", "go ahead", "added the", "exported", "configured", "logged in",
    "credentials are", "here is the", "here's the", "found it", "the bug", "because", "caused by", "due to",
    "comes from", "the reason", "which is why", "solved", "fixes it", "fixed it", "the culprit", "i now",
    "happened because", "installed", "upgraded", "granted", "i gave", "i've given", "you can retry",
    # the agent telling the change it made after the failure, in the first person
    "i made ", "i changed ", "i updated ", "i replaced ", "i moved ", "i removed ", "i rewrote ", "i wrapped ",
    "i've made ", "i've changed ", "i've updated ", "i've replaced ", "i have changed ", "i have updated ",
    "根本原因", "原因是", "原因", "修复", "已修复", "解决", "改成", "改为", "已经正常", "我已", "已添加", "已授予",
    "原因は", "修正しました", "直しました", "解決", "追加しました", "切り替え", "付与しました", "設定しました",
    "因为", "是由于", "导致", "已经", "好了", "ため", "せいで", "しました",
)
#: The cues without a non-ASCII character: all an ASCII-only text can hold.
_ASCII_RESOLUTION_CUES = tuple(dict.fromkeys(c for c in RESOLUTION_CUES if c.isascii()))
_ALL_RESOLUTION_CUES = tuple(dict.fromkeys(RESOLUTION_CUES))
#: Characters of a message searched for a resolution cue (the templates' ``:head``).
CUE_HEAD = 4000


def has_resolution_cue(text: object) -> bool:
    """Whether the first :data:`CUE_HEAD` characters of a message hold a resolution cue, exactly as SQLite's
    ``EXISTS (SELECT 1 FROM json_each(:cues) AS c WHERE instr(lower(substr(text, 1, 4000)), c.value) > 0)``
    decides it (``tests/unit/test_resolution_cues.py`` checks against SQLite itself): ASCII case folding only, and for
    a BLOB the first 4,000 bytes, as ``substr()`` counts a BLOB. A number is tested as the text SQLite gives it."""
    if isinstance(text, bytes):
        low = text[:CUE_HEAD].lower()  # bytes.lower() folds ASCII letters only, as SQLite's lower()
        return any(cue.encode() in low for cue in _ALL_RESOLUTION_CUES)
    if not isinstance(text, str):
        return False
    head = ascii_lower(text[:CUE_HEAD])
    return any(cue in head for cue in (_ASCII_RESOLUTION_CUES if head.isascii() else _ALL_RESOLUTION_CUES))


class Markers(NamedTuple):
    """A marker vocabulary a template may declare (``-- markers:``): the words an FTS template pairs with the
    query terms (``words``; prefix form unless trigram), the Chinese and Japanese cues added to them under a word
    tokenizer (a CJK run is one token there, so the prefix form finds a cue that opens a run, and an ASCII term
    finds a failure or decision told in Chinese or Japanese), and the cues a substring plan matches by
    ``instr()`` (``cues``: a cue inside a CJK run too)."""

    words: tuple[str, ...]
    cjk_words: tuple[str, ...]
    cues: tuple[str, ...]

    def fts_words(self, tokenizer: str) -> list[str]:
        """The words of the FTS expression under ``tokenizer`` (a CJK run is no token of its own under trigram)."""
        return [*self.words, *(self.cjk_words if tokenizer != "trigram" else ())]


#: The marker vocabularies, by the name a template's header gives.
MARKERS: Mapping[str, Markers] = {
    "failure": Markers(FAILURE_WORDS, unsegmented(FAILURE_CUES), FAILURE_CUES),
    "decision": Markers(DECISION_WORDS, unsegmented(DECISION_CUES), DECISION_CUES),
}
