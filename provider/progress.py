"""Progress for long operator tools (``tools/make-fixture --large``, ``qualify``, ``tools/bench``).

On a terminal (the stream is a TTY) a one-line status is drawn and redrawn with the elapsed time, on stderr,
and cleared at the end; when the stream is piped or redirected nothing at all is written, so scripts and CI
logs stay clean. Labels are the tool's own phase names, never content.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

#: Seconds between redraws.
TICK_S = 0.5


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextmanager
def progress(label: str, *, stream: TextIO | None = None) -> Iterator[None]:
    """Show ``label… 12s`` on a terminal while the block runs; write nothing when not on a terminal."""
    out = stream if stream is not None else sys.stderr
    if not _is_terminal(out):
        yield
        return
    started = time.monotonic()
    done = threading.Event()

    def draw() -> None:
        out.write(f"\r\x1b[2K{label}… {time.monotonic() - started:.0f}s")
        out.flush()

    def tick() -> None:
        while not done.wait(TICK_S):
            draw()

    draw()
    ticker = threading.Thread(target=tick, name="progress", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        done.set()
        ticker.join()
        out.write(f"\r\x1b[2K{label}: done in {time.monotonic() - started:.1f}s\n")
        out.flush()
