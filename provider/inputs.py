"""Bounded reads of everything the provider is handed: request files, stdin, ``serve`` lines, the config, and
the transcripts freshness looks into.

Nothing is held beyond its bound: a file is read up to ``limit + 1`` bytes (one more, so the caller can tell
"too large" from "exactly the limit"); a ``serve`` line longer than its bound is cut at ``limit + 1`` bytes and
the rest of that line is read and dropped in fixed-size chunks, never buffered; stdin is read only until the
request's deadline. A path that is not a regular file (a FIFO, a device, a directory) is refused before any
byte is read, and opening it never blocks (``O_NONBLOCK``). A file on disk that anything the user runs can
swap (a transcript) is read with :func:`regular_file_chunks`: the same refusal, chunks of a fixed size up to a
byte cap, and the caller's deadline checked before every chunk.
"""

from __future__ import annotations

import os
import select
import stat
import time
from collections.abc import Callable, Generator, Iterator
from typing import BinaryIO

#: Size of the chunks in which an oversize ``serve`` line is read and dropped.
DISCARD_CHUNK = 64 * 1024


class NotRegularFile(OSError):
    """The path names a FIFO, device, socket or directory."""


class InputDeadline(Exception):
    """The deadline expired before the input was complete."""


def open_regular(path: str | os.PathLike[str], *, follow: bool = True) -> tuple[int, os.stat_result]:
    """Open ``path`` read-only without blocking and return (fd, fstat); refuse anything but a regular file.
    ``follow=False`` also refuses a symbolic link as the last component (``O_NOFOLLOW``: ``ELOOP``).

    Raises ``FileNotFoundError``/``OSError`` as ``os.open`` does, or :class:`NotRegularFile`.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        regular = stat.S_ISREG(st.st_mode)
        if regular:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    if not regular:
        os.close(fd)
        raise NotRegularFile("not a regular file")
    return fd, st


def fd_chunks(fd: int, cap: int, *, chunk: int = DISCARD_CHUNK,
              check: Callable[[], object] | None = None) -> Iterator[bytes]:
    """The bytes of ``fd`` up to end of file or ``cap`` bytes in all, in chunks of at most ``chunk`` bytes;
    ``check`` (e.g. a deadline's ``check``, which raises once it has passed) is called before every read."""
    left = cap
    while left > 0:
        if check is not None:
            check()
        data = os.read(fd, min(left, chunk))
        if not data:
            return
        left -= len(data)
        yield data


def private_problem(st: os.stat_result, role: str, fix: str, *, mask: int = 0o022) -> str | None:
    """Why the file or directory ``st`` describes is not private to this user (as ssh judges its files), or
    None: owned by another user (root excepted), or a permission bit of ``mask`` set (0o022, anyone else may
    write: the config and its directory; 0o077, anyone else may read or write: the digest key). The reason
    names the file by its ``role`` (``"the config file"``), never by its path, and ends with the ``fix``."""
    if st.st_uid not in (os.geteuid(), 0):
        return f"{role} is owned by another user; fix: chown $USER"
    if st.st_mode & mask:
        others = "group- or world-writable" if mask == 0o022 else "readable or writable by group or others"
        return f"{role} is {others}; fix: {fix}"
    return None


def read_fd(fd: int, limit: int) -> bytes:
    """Read at most ``limit + 1`` bytes from ``fd``."""
    return b"".join(fd_chunks(fd, limit + 1))


def regular_file_chunks(path: str | os.PathLike[str], cap: int, *, chunk: int = DISCARD_CHUNK,
                        check: Callable[[], object] | None = None,
                        follow: bool = True) -> Generator[bytes, None, None]:
    """The bytes of the regular file at ``path`` (:func:`open_regular`, before the first chunk) in chunks, up to
    ``cap`` bytes, ``check`` called before every read (:func:`fd_chunks`). The file is closed when the
    generator finishes or is closed: a caller that may stop early closes it (``contextlib.closing``)."""
    fd, _ = open_regular(path, follow=follow)
    try:
        yield from fd_chunks(fd, cap, chunk=chunk, check=check)
    finally:
        os.close(fd)


def read_regular_file(path: str | os.PathLike[str], limit: int, *,
                      check: Callable[[], object] | None = None) -> bytes:
    """At most ``limit + 1`` bytes of the regular file at ``path`` (see :func:`regular_file_chunks`)."""
    return b"".join(regular_file_chunks(path, limit + 1, check=check))


def read_until_deadline(fd: int, limit: int, expires_at: float) -> bytes:
    """At most ``limit + 1`` bytes of ``fd`` up to end of file; :class:`InputDeadline` at ``expires_at``
    (a ``time.monotonic()`` value) when the writer neither finishes nor closes it in time."""
    parts: list[bytes] = []
    left = limit + 1
    while left > 0:
        remaining = expires_at - time.monotonic()
        if remaining <= 0:
            raise InputDeadline
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            raise InputDeadline
        chunk = os.read(fd, min(left, DISCARD_CHUNK))
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def bounded_lines(stream: BinaryIO, limit: int) -> Iterator[bytes]:
    """Yield each line of ``stream`` (without its newline), cut to at most ``limit + 1`` bytes.

    The part of an oversize line past its bound is read in :data:`DISCARD_CHUNK` pieces and dropped, so memory
    stays bounded whatever the caller sends.
    """
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if line.endswith(b"\n"):
            yield line[:-1]
            continue
        if len(line) <= limit:  # the last line, without a newline
            yield line
            return
        while True:  # drop the rest of this line
            rest = stream.readline(DISCARD_CHUNK)
            if not rest or rest.endswith(b"\n"):
                break
        yield line
