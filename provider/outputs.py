"""The one way the operator commands write a file: inside a given directory, never through a link, atomically.

``demo``'s sample request, the ``qualify --replay`` reports, the config and the digest key all go through
:func:`write_file_in`. The directory is the operator's choice and is opened as given; the file's own name must
be a plain name (no separator, not ``.`` or ``..``), so nothing lands outside it. The bytes go to a fresh
temporary file created with ``O_EXCL | O_NOFOLLOW`` and the final mode, fsynced, and then take the name in one
step: a ``rename`` (replacing a regular file) or, with ``exclusive``, a hard link (which fails when the name
exists). A name that is already a symbolic link, a directory or any other non-regular file is refused with
:class:`UnsafeWriteTarget` before anything takes it; a link is never followed. The directory is fsynced after
the name changes, so the order of two writes survives a crash.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from .errors import UnsafeWriteTarget

#: The longest file name (in bytes) most file systems take.
NAME_MAX = 255


def _refuse_non_regular(dir_fd: int, name: str, role: str) -> None:
    """:class:`UnsafeWriteTarget` when ``name`` exists in the directory as anything but a regular file."""
    try:
        st = os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise UnsafeWriteTarget(f"{role} is a symbolic link or not a regular file: refused; remove it")


def refuse_unsafe_target(directory: Path, name: str, *, role: str) -> None:
    """:class:`UnsafeWriteTarget` now when :func:`write_file_in` would refuse ``name`` (a command that writes
    several files checks the later ones before it writes the first). A missing directory holds nothing."""
    try:
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        _refuse_non_regular(dir_fd, name, role)
    finally:
        os.close(dir_fd)


def write_file_in(directory: Path, name: str, data: bytes, *, role: str, mode: int = 0o644,
                  exclusive: bool = False) -> Path:
    """Write ``data`` as ``directory/name`` (see the module docstring) and return that path.

    ``role`` names the file in an error (``"the digest key file"``), never its path. ``exclusive``: the name
    must not exist yet (``FileExistsError`` when a regular file already holds it). Raises
    :class:`UnsafeWriteTarget` for a link or a non-regular file at the name, ``ValueError`` for a name that is
    not a plain file name, ``OSError`` as the file system does.
    """
    if (not name or name in (".", "..") or "/" in name or "\0" in name
            or len(os.fsencode(name)) > NAME_MAX):
        raise ValueError("not a plain file name")
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _refuse_non_regular(dir_fd, name, role)
        tmp = f".{os.urandom(6).hex()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
                     dir_fd=dir_fd)
        try:
            try:
                os.fchmod(fd, mode)  # the umask may have narrowed it
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            if exclusive:
                try:
                    os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
                except FileExistsError:
                    _refuse_non_regular(dir_fd, name, role)  # a link planted since the check above
                    raise
            else:
                os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)  # replaces a link, never follows it
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=dir_fd)
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return directory / name
