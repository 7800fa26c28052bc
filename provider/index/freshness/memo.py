"""What a warm process may remember about transcript files between assessments: line counts and head cwds.

A value is kept under the stat it was read with (device, inode, size, mtime and ctime in ns: any write moves
the ctime), so a file that changed is read again; every assessment still stats every file it judges. The
memo lives as long as its owner (a warm ``serve``) and holds paths in that process's memory only.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, TypeVar, cast

T = TypeVar("T")

#: Values kept at most (least recently used out).
MEMO_SIZE: Final = 8192


def identity(st: os.stat_result) -> tuple[int, ...]:
    """What a file's content is remembered under: any write, rename or copy changes one of these."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@dataclass
class TranscriptMemo:
    """Line counts and head cwds by file identity, bounded; ``hits`` and ``misses`` count its use."""

    size: int = MEMO_SIZE
    hits: int = 0
    misses: int = 0
    _values: OrderedDict[tuple[object, ...], object] = field(default_factory=OrderedDict, repr=False)

    def remembered(self, key: tuple[object, ...], compute: Callable[[], T], keep: Callable[[T], bool]) -> T:
        """The value kept under ``key``, else ``compute()`` (kept when ``keep`` says it may be)."""
        if key in self._values:
            self._values.move_to_end(key)
            self.hits += 1
            return cast("T", self._values[key])
        self.misses += 1
        value = compute()
        if keep(value):
            self._values[key] = value
            while len(self._values) > self.size:
                self._values.popitem(last=False)
        return value

    def clear(self) -> None:
        self._values.clear()
