"""A run records whatever the terminal does: stdout and stderr that drop what they cannot write.

A reader that leaves (``chunkbench run ... | head``), a full device, a terminal whose encoding
lacks a character of the summary table: none of them ends a run, which completes and is recorded.
The first failed write to a stream is said once on the other one (while that one still works);
from then on the stream's file descriptor is ``/dev/null``, so what Python still holds for it and
flushes at exit goes nowhere instead of failing again (the recipe of Python's ``signal`` docs for
a closed pipe). Characters the stream's encoding lacks are written as ``?``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from typing import Any, TextIO


class GuardedStream:
    """A text stream whose failed writes and flushes are dropped (an ``OSError``: a closed pipe,
    a full device) after saying so once on ``other()``; everything else is the stream's own
    (``isatty``, ``fileno``, ``encoding``)."""

    guarded = True  # seen through wrappers that pass attributes on (harness.secrets.MaskedStream)

    def __init__(self, stream: TextIO, name: str, other: Callable[[], TextIO | None] = lambda: None):
        self.stream, self.name, self.other = stream, name, other
        self.failed: OSError | None = None

    def write(self, text: str) -> int:
        if self.failed is None:
            try:
                self.stream.write(text)
            except UnicodeEncodeError:  # a stream whose error handler could not be set (guard_streams)
                encoding = getattr(self.stream, "encoding", None) or "ascii"
                self.write(text.encode(encoding, "replace").decode(encoding))
            except BlockingIOError:  # a non-blocking terminal full for now: this text is lost, not the stream
                pass
            except OSError as e:
                self._fail(e)
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self.failed is None:
            try:
                self.stream.flush()
            except BlockingIOError:
                pass
            except OSError as e:
                self._fail(e)

    def _fail(self, error: OSError) -> None:
        self.failed = error
        _to_devnull(self.stream)
        other = self.other()
        if other is None:
            return
        try:  # a stream that fails too drops this line itself
            other.write(f"chunkbench: warning: {self.name} cannot be written ({error.strerror or error}); "
                        f"what the run prints there is dropped, and the run goes on\n")
            other.flush()
        except (OSError, ValueError):
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _to_devnull(stream: TextIO) -> None:
    """Point the stream's file descriptor at ``/dev/null``, where it has one."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def guard_streams() -> None:
    """``sys.stdout`` and ``sys.stderr`` guarded from now on (once; a stream already guarded,
    directly or under another wrapper, is left as it is). Characters stdout's encoding lacks
    become ``?`` (stderr replaces them already, with backslashes)."""
    for name, other in (("stdout", "stderr"), ("stderr", "stdout")):
        stream = getattr(sys, name)
        if stream is None or getattr(stream, "guarded", False):
            continue
        if name == "stdout" and getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(errors="replace")
            except (OSError, ValueError):  # a stream that cannot change it: GuardedStream.write replaces
                pass
        setattr(sys, name, GuardedStream(stream, name, lambda other=other: getattr(sys, other)))
