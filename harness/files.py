"""What a path the user gave is, when it is not a regular file: a FIFO or a device opened as data
would block or never end (``/dev/zero``), so readers ask before they open."""

from __future__ import annotations

import os
import stat
from pathlib import Path

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def not_regular(path: str | os.PathLike) -> str | None:
    """What ``path`` (links followed) is when it exists and is no regular file, e.g. "a FIFO
    (named pipe)"; None for a regular file or a missing path."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISREG(mode):
        return None
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    target = os.path.realpath(path)
    return kind + (f" ({target})" if target != str(Path(path).absolute()) else "")
