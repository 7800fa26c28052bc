"""What a warm process remembers of the index between requests, kept only while the index's state holds.

A value is remembered under the index's state as the file system shows it before the read: the database file's
identity (device, inode, size, mtime and ctime in ns) and the ``-wal`` file's size and mtime. The state is taken
again after the read: only when it did not move are the read's new values kept, and a read that used a
remembered value while the state moved is done again with nothing remembered. A state with a ``-journal`` (a
rollback write in progress) is never remembered. Each value is what a fresh read would give again, so a hit
changes no answer. Bounded: the least recently used values go first.
"""

import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, TypeVar, cast

from ..contract.meta import OpenMode
from .connection import Deadline, ReadSnapshot, read_index

T = TypeVar("T")
StateKey = tuple[object, ...]
#: Values remembered at most.
MEMO_SIZE: Final = 256


def index_state(db_path: Path) -> StateKey | None:
    """The index's state as the file system shows it; None when nothing may be remembered under it."""
    try:
        main = os.stat(db_path)
        if os.path.exists(f"{db_path}-journal"):
            return None
        try:
            wal = os.stat(f"{db_path}-wal")
            wal_state: tuple[int, int] | None = (wal.st_size, wal.st_mtime_ns)
        except FileNotFoundError:
            wal_state = None
    except OSError:
        return None
    return (str(db_path), main.st_dev, main.st_ino, main.st_size, main.st_mtime_ns, main.st_ctime_ns, wal_state)


@dataclass(slots=True)
class IndexMemo:
    """The values a warm process keeps, by index state and what was read; hits and stores are counted."""

    size: int = MEMO_SIZE
    values: OrderedDict[StateKey, object] = field(default_factory=OrderedDict)
    hits: int = 0
    stored: int = 0


@dataclass(slots=True)
class RequestMemo:
    """One read's view of an :class:`IndexMemo` under the index state taken before the read (no store or no
    state: nothing is remembered). Hits count; new values are kept only by :meth:`keep`."""

    store: IndexMemo | None = None
    state: StateKey | None = None
    hits: int = 0
    new: dict[StateKey, object] = field(default_factory=dict)

    def get(self, part: StateKey, compute: Callable[[], T]) -> T:
        """The value remembered for ``part`` under this read's index state, else ``compute()``."""
        if self.store is None or self.state is None:
            return compute()
        key = (self.state, *part)
        values = self.store.values
        if key in values:
            values.move_to_end(key)
            self.hits += 1
            self.store.hits += 1
            return cast("T", values[key])
        value = compute()
        self.new[key] = value
        return value

    def keep(self) -> None:
        if self.store is None:
            return
        values = self.store.values
        for key, value in self.new.items():
            values[key] = value
            self.store.stored += 1
        while len(values) > self.store.size:
            values.popitem(last=False)


def read_remembering(db_path: Path, work: Callable[[ReadSnapshot, RequestMemo], T], *, memo: IndexMemo | None,
                     deadline: Deadline, vfs: str | None) -> tuple[T, OpenMode]:
    """``read_index`` of ``work`` with ``memo`` (see the module docstring for when values are kept or read again)."""
    if memo is None:
        return read_index(db_path, lambda snap: work(snap, RequestMemo()), deadline=deadline, vfs=vfs)
    before = index_state(db_path)
    request = RequestMemo(memo, before)
    result = read_index(db_path, lambda snap: work(snap, request), deadline=deadline, vfs=vfs)
    if before is not None and index_state(db_path) == before:
        request.keep()
    elif request.hits:
        result = read_index(db_path, lambda snap: work(snap, RequestMemo()), deadline=deadline, vfs=vfs)
    return result
