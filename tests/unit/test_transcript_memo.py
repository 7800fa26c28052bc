"""Issue 36: ``index.freshness.memo.TranscriptMemo``, what a warm ``serve`` remembers about transcript files.

Bounded (``MEMO_SIZE`` values, the least recently used out), counted (``hits``, ``misses``), a value kept only
when ``keep`` allows it, emptied by ``clear``, and never showing what it holds (private paths) in its repr.
"""

from __future__ import annotations

from obelisk_session_evidence.index.freshness.memo import MEMO_SIZE, TranscriptMemo


def _get(memo: TranscriptMemo, key: str, value: object = None, *, keep: bool = True) -> object:
    return memo.remembered((key,), lambda: key if value is None else value, lambda _: keep)


def test_a_value_is_computed_once_and_counted() -> None:
    memo = TranscriptMemo()
    assert (memo.hits, memo.misses) == (0, 0)
    assert _get(memo, "/a") == "/a"
    assert _get(memo, "/a", "recomputed") == "/a"  # remembered, not computed again
    assert (memo.hits, memo.misses) == (1, 1)


def test_a_value_keep_refuses_is_computed_every_time() -> None:
    memo = TranscriptMemo()
    assert _get(memo, "/a", 1, keep=False) == 1
    assert _get(memo, "/a", 2, keep=False) == 2
    assert (memo.hits, memo.misses) == (0, 2)


def test_the_least_recently_used_value_goes_first() -> None:
    memo = TranscriptMemo(size=2)
    _get(memo, "/a")
    _get(memo, "/b")
    _get(memo, "/a")  # /a used again: /b is now the oldest
    _get(memo, "/c")  # one too many: /b goes
    assert _get(memo, "/a", "new") == "/a" and _get(memo, "/c", "new") == "/c"
    assert _get(memo, "/b", "new") == "new"


def test_the_default_bound_is_memo_size_values() -> None:
    memo = TranscriptMemo()
    assert memo.size == MEMO_SIZE
    for n in range(MEMO_SIZE + 1):
        _get(memo, f"/t/{n}")
    assert _get(memo, "/t/0", "new") == "new"  # the first went when the 8193rd came
    assert _get(memo, f"/t/{MEMO_SIZE}", "new") == f"/t/{MEMO_SIZE}"


def test_clear_forgets_everything_and_the_repr_shows_no_path() -> None:
    memo = TranscriptMemo()
    _get(memo, "/home/u/.claude/projects/secret-project/s1.jsonl")
    assert "secret-project" not in repr(memo)
    memo.clear()
    assert _get(memo, "/home/u/.claude/projects/secret-project/s1.jsonl", "again") == "again"
