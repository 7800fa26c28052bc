"""What a warm process may remember about transcript files between requests: line counts and head cwds.

Every request still stats every file it judges; a remembered value is used only when the file's stat is the
one it was read under (device, inode, size, mtime and, for line counts, ctime in ns: any write moves the
ctime), so a changed file is read again. Bounded (least recently used out). Only the scoped assessment a
request makes remembers (``Ctx.remember``); paths stay in this process's memory, never written anywhere.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable
from typing import Final, TypeVar

T = TypeVar("T")
MEMO_SIZE: Final = 8192
_MEMO: OrderedDict[tuple[object, ...], object] = OrderedDict()
STATS: Final = {"hits": 0, "misses": 0}


def identity(st: os.stat_result, *, with_ctime: bool) -> tuple[int, ...]:
    base = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    return (*base, st.st_ctime_ns) if with_ctime else base


def remembered(key: tuple[object, ...], compute: Callable[[], T], keep: Callable[[T], bool]) -> T:
    """The value kept under ``key``, else ``compute()`` (kept when ``keep`` says it may be)."""
    if key in _MEMO:
        _MEMO.move_to_end(key)
        STATS["hits"] += 1
        return _MEMO[key]  # type: ignore[return-value]
    STATS["misses"] += 1
    value = compute()
    if keep(value):
        _MEMO[key] = value
        while len(_MEMO) > MEMO_SIZE:
            _MEMO.popitem(last=False)
    return value


def clear() -> None:
    _MEMO.clear()
