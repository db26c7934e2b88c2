"""A wall-clock limit on a block of Python code: the chunk stage's ``chunker_timeout_s``.

The limit is SIGALRM (``setitimer``): its handler raises in the main thread at the chunker's next
Python bytecode, which ends a loop that never returns, a ``sleep`` or a blocking socket read. It is
honest about what it cannot do:

- a call into native code (a tokenizer, a torch op) is only interrupted once it returns to Python;
- off the main thread, on a platform without SIGALRM, or while another ITIMER_REAL timer is armed
  (a caller's own limit, which this one must not silently replace), the limit is not enforced and
  a warning says so once. A worker thread is no way out: Python cannot stop a thread, so a chunker
  past its limit would go on running (and writing to the cache) beside the rest of the run.
"""

from __future__ import annotations

import logging
import signal
import threading
from contextlib import contextmanager

logger = logging.getLogger(__name__)
_warned: set[str] = set()


class Expired(BaseException):
    """Raised in the limited block when its time is up. A BaseException, as KeyboardInterrupt is,
    so that a chunker's own ``except Exception`` (a fallback on a failed parse) cannot swallow it."""


def _unenforceable() -> str | None:
    if not hasattr(signal, "setitimer"):
        return "this platform has no SIGALRM"
    if threading.current_thread() is not threading.main_thread():
        return "the run is not in the main thread"
    if signal.getitimer(signal.ITIMER_REAL)[0] > 0:
        return "another timer (ITIMER_REAL) is armed"
    return None


@contextmanager
def time_limit(seconds: float | None, what: str = "the limit"):
    """Raise :class:`Expired` in the block after ``seconds`` (None: no limit). ``what`` names the
    setting in the warning when the limit cannot be enforced here."""
    why = _unenforceable() if seconds else None
    if not seconds or why:
        if why and why not in _warned:
            _warned.add(why)
            logger.warning("%s is not enforced: %s (the limit needs SIGALRM in the main thread)", what, why)
        yield
        return

    def expire(signum, frame):
        raise Expired()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:  # None: a handler set outside Python, put back as the default
            signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)
