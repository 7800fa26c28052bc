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
* A term also names its other spellings (``retrieval.variants``: inflections, joined and hyphenated forms, matched
  as whole words) and, when it is a command, its equivalent forms (``retrieval.commands``). The forms reach MATCH
  as exact phrases; SQL ``instr`` gets the few strings that cover them (``PreparedTerms.derived``), and
  :func:`admits` keeps a row only when a term, a form or a command equivalent to the term's is really in it.
"""

import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from ..contract.meta import Degradation
from ..errors import InvalidQueryTerms
from .commands import Command, pieces, runs, term_commands
from .variants import covering, holds_word, is_plain, term_forms

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
                  "opt", "let's", "i'll", "we'll", "should use", "move to", "moving to",
                  # a choice made or kept without those words: "use X", "X stays", "stick with X", "back to X" (a
                  # word ending in a space is one whole token: "use " is never "user"; "keep " and "keeping "
                  # are never "keeps", which tells what something does: "the backoff keeps retrying")
                  "use ", "stay", "stick with", "sticking with", "keep ", "keeping ", "after all", "back to",
                  "no longer", "from here on", "going forward", "not going", "ditch", "scrap ", "take out",
                  "get rid of", "adopt", "standardis", "standardiz")


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
    instr_terms: tuple[str, ...]           # lower-cased for instr() scoring (SQLite lower semantics); derived last
    fts_terms: tuple[str, ...]             # FTS5 strings that reach MATCH (the terms', then their forms')
    post_filter_terms: tuple[str, ...]     # short terms under trigram, applied by instr only
    degradations: tuple[Degradation, ...] = ()
    #: The terms of plain words (lower-case): matched as whole words, never inside another word.
    plain: tuple[str, ...] = ()
    #: The whole-word forms of the plain terms (``retrieval.variants``), the terms themselves included.
    words: tuple[str, ...] = ()
    #: The strings of ``instr_terms`` that no term is, added for the forms and the commands (SQL finds rows by them,
    #: :func:`admits` decides).
    derived: tuple[str, ...] = ()
    #: What the terms that name a command run (``retrieval.commands``).
    commands: tuple[Command, ...] = ()
    #: The FTS5 strings of the terms themselves, without their forms (the leading part of ``fts_terms``).
    own_fts: tuple[str, ...] = ()

    def fts_any(self) -> str | None:
        return " OR ".join(self.fts_terms) if self.fts_terms else None


def prepare_terms(raw_terms: Sequence[str], *, tokenizer: str, tokenize: Tokenize,
                  scripts: Mapping[str, str] | None = None) -> PreparedTerms:
    """Normalise and quote terms for the live tokenizer; raise if nothing usable remains. ``scripts``: the
    repository's package.json scripts by name (what ``npm test`` runs), if any."""
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
    instr = tuple(dict.fromkeys(ascii_lower(t) for t in usable))
    plain = tuple(ascii_lower(t) for t in usable if is_plain(t))
    words, fts_forms = _forms(usable, tokenizer=tokenizer, tokenize=tokenize, quoted=set(fts))
    commands = tuple(dict.fromkeys(c for t in usable for c in term_commands(t, scripts or {})))
    derived = tuple(d for d in dict.fromkeys((*covering(words, instr), *pieces(commands))) if d and d not in instr)
    return PreparedTerms(
        terms=terms,
        instr_terms=(*instr, *derived),
        fts_terms=(*fts, *fts_forms),
        post_filter_terms=tuple(short),
        degradations=tuple(sorted(degradations)),
        plain=plain,
        words=words,
        derived=derived,
        commands=commands,
        own_fts=tuple(fts),
    )


def _forms(usable: Sequence[str], *, tokenizer: str, tokenize: Tokenize,
           quoted: set[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The whole-word forms of the plain terms, and the FTS5 strings of those that are not terms themselves (each a
    phrase the live tokenizer gives tokens for; under trigram at least three characters)."""
    words: dict[str, None] = {}
    fts: dict[str, None] = {}
    for term in usable:
        if not is_plain(term):
            continue
        for form in term_forms(term):
            words[form] = None
            quoted_form = fts_string(form)
            if quoted_form in quoted or (tokenizer == "trigram" and len(form) < 3) or not tokenize(form):
                continue
            fts[quoted_form] = None
    return tuple(words), tuple(f for f in fts if f not in quoted)


def _without_roots(text: str, roots: Sequence[str]) -> str:
    """``text`` without the bound roots' own spellings (a repository at ``~/src/test-app`` puts ``test`` in every
    absolute path under it: that names where the session worked, not what it was about)."""
    for spelling in (r.rstrip("/") for r in roots):
        if len(spelling) > 1:
            text = re.sub(re.escape(spelling), "", text, flags=re.IGNORECASE)
    return text


def admits(terms: PreparedTerms, texts: Sequence[str], *, cut: bool, command: str | None = None,
           tool: str | None = None, roots: Sequence[str] = (), edited_file: bool = False) -> bool:
    """Whether a row whose searched cells read as ``texts`` holds what the request asks, as far as these texts
    tell: a term that is not plain words as a substring (as SQL found it), a plain term or one of its forms as a
    whole word, (``command``: the row's command) a command equivalent to a term's, or (``tool``: the name of the
    row's tool) a term naming that tool, as the ``tool_names`` templates match it. A form that is not the term
    itself counts inside a path or identifier only in an ``edited_file`` row (file history: the file is what the
    evidence is about, and ``webhook`` names the history of ``webhooks.py``); in a read, a search, an output or
    a message it must stand as a word (``retrieval.variants.holds_word``). When nothing here holds,
    the row is kept only if ``cut`` (SQL searched text these do not show) — the rows of a request whose terms
    add no form and name no plain word or command are kept whatever they hold, as before."""
    if not terms.plain and not terms.derived:
        return True
    if tool is not None and _names_tool(terms, tool):
        return True
    derived = set(terms.derived)
    others = match_variants([t for t in terms.instr_terms if t not in derived and t not in terms.plain], roots)
    lowered = [ascii_lower(t) for t in texts]
    if others and any(v in low or v in loose(low) for low in lowered for v in others):
        return True
    plain = set(terms.plain)
    bare = [_without_roots(text, roots) for text in texts]  # a word of the root's own path is in every row
    if any(holds_word(text, ascii_lower(text), form, variant=form not in plain and not edited_file)
           for text in bare for form in terms.words):
        return True
    if command is not None and runs(command, terms.commands, roots):
        return True
    return cut


def _names_tool(terms: PreparedTerms, call_name: str) -> bool:
    """Whether a term is the name of the call's tool, as the ``tool_names`` templates match it: the whole name,
    case folded, or the tool's own part of an MCP name (``search`` names ``mcp__docs__search``)."""
    name = ascii_lower(call_name)
    own = name.rsplit("__", 1)[-1] if name.startswith("mcp__") else None
    return any(low and low in (name, own) for low in (ascii_lower(t) for t in terms.terms))


def marker_expression(words: Sequence[str], tokenizer: str) -> str:
    """An FTS5 OR-group of the provider's own marker words (prefix form unless trigram, or unless the word holds a
    space: a phrase, or one whole token written with a space after it)."""
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


def all_terms_expression(terms: PreparedTerms) -> str | None:
    """``term AND term …``: a row holding every term itself (not merely a form of it) that can reach MATCH
    (``:fts_all``), or None when none can."""
    return " AND ".join(terms.own_fts) if terms.own_fts else None


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


#: Cue words matched by substring (``instr``) where FTS cannot segment the text: lower-case, English, Chinese,
#: Japanese and Korean. They are constants of the provider, never request text.
FAILURE_CUES = (
    "fail", "error", "traceback", "exception", "crash", "refused", "denied", "cannot", "timed out",
    "失败", "错误", "报错", "异常", "拒绝", "超时", "无法", "崩溃", "原因", "导致", "耗尽", "不够", "卡住",
    "失敗", "エラー", "例外", "拒否", "タイムアウト", "できません", "止まる", "止まり", "落ちる", "原因",
    "问题", "問題", "不了", "されない",
    # Korean: failure, error, exception, "does not work", "will not", refused, timeout, crash, cause
    "실패", "오류", "에러", "예외", "안 돼", "안돼", "안 되", "안되", "되지 않", "작동하지 않", "동작하지 않",
    "거부", "시간 초과", "타임아웃", "멈춰", "멈춥", "튕겨", "먹통", "깨져", "원인", "문제",
)
DECISION_CUES = (
    "decid", "chose", "choos", "instead", "abandon", "revert", "because", "switch", "rather", "went with",
    "决定", "选择", "改成", "改为", "换成", "而不是", "放弃", "因为", "采用", "原因",
    "決定", "選択", "代わりに", "切り替え", "やめ", "ため", "採用", "原因", "修正しました", "直しました",
    # Korean: decided, chose, instead, switch to, keep, reverted, adopt, because, cause, fixed
    "결정", "하기로", "선택", "대신", "바꾸", "바꿨", "유지", "되돌", "채택", "때문", "원인", "수정했", "고쳤",
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
    # the agent naming the cause of a failure in words of its own
    "the problem is", "the issue is", "the error is", "the failure is", "is failing because", "different cause",
    "another cause", "different failure", "the test expects", "was caused", "is caused", "that's why",
    "that is why",
    # Korean: the cause is, because, fixed, resolved, added, granted, set, retry
    "원인은", "원인이", "때문", "수정했", "고쳤", "해결", "추가했", "권한을 부여", "부여했", "설정했", "다시 시도",
)
#: What a user's message says when it supplies what a failure lacked (a permission, a token scope, a role, a key,
#: a package) or asks to try again; a user's message after a failure is read with these besides
#: :data:`RESOLUTION_CUES` (``retrieval.resolution``). Lower-case; English, Chinese, Japanese, Korean.
SUPPLY_CUES = (
    "now has", "now have", "has access", "have access", "write access", "read access", "permission", "scope",
    "role", "granted", "i gave", "i've given", "i added", "added the", "i enabled", "enabled", "i created",
    "attached", "installed", "exported", "configured", "logged in", "is set", "are set", "try again", "retry",
    "run it again", "once more", "again", "go ahead", "should work now", "works now", "is free now", "is up",
    "权限", "已授予", "已添加", "已配置", "重试", "再试", "権限", "付与", "追加しました", "もう一度", "再実行",
    "권한", "부여", "추가했", "설정했", "다시",
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


def has_supply_cue(text: object) -> bool:
    """Whether a user's message says it supplied what a failure lacked or asks to try again (:data:`SUPPLY_CUES`,
    in its first :data:`CUE_HEAD` characters, ASCII case folded)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str):
        return False
    head = ascii_lower(text[:CUE_HEAD])
    return any(cue in head for cue in SUPPLY_CUES)


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
