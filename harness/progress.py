"""Progress bars: tqdm, drawn only where it reads well.

On a terminal every bar is drawn, nested ones on the lines below. Where stderr is no terminal
(a log file, a pipe, a SLURM job), a bar opened while another one is showing is not drawn:
tqdm would redraw the pair with cursor movements (``\\x1b[A``) that a log file keeps as garbage.
The outer bar (a stage's documents, collections or queries) still reports progress there.
"""

from __future__ import annotations

import sys
from typing import Any

from tqdm.auto import tqdm as _tqdm


def tqdm(*args: Any, **kwargs: Any) -> _tqdm:
    """``tqdm.auto.tqdm`` with the rule above; same arguments."""
    if not sys.stderr.isatty() and any(not bar.disable for bar in list(_tqdm._instances)):
        kwargs["disable"] = True
    return _tqdm(*args, **kwargs)
