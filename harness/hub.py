"""Is the Hugging Face Hub reachable? Asked once per process, so that a loader on a machine
without it fails in one line at once instead of after the libraries' retries (``datasets`` tries
the Hub five times with backoff, about 26 s, printing each retry).

:func:`reachable` opens one TCP connection to the Hub's endpoint (``HF_ENDPOINT``) with a short
timeout; :func:`offline` runs a block with the libraries' offline switches on, so what is
already in the local cache still loads and anything else fails at once.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from urllib.parse import urlparse

PROBE_SECONDS = 3.0


def endpoint() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def offline_by_env() -> bool:
    return any(os.environ.get(v, "0") not in ("", "0", "false", "False")
               for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))


@cache
def reachable() -> bool:
    """Whether a TCP connection to the Hub's endpoint opens within ``PROBE_SECONDS``; False
    without trying when the environment says offline."""
    if offline_by_env():
        return False
    url = urlparse(endpoint())
    try:
        socket.create_connection((url.hostname, url.port or (443 if url.scheme == "https" else 80)),
                                 timeout=PROBE_SECONDS).close()
    except OSError:
        return False
    return True


OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")


def offline_unless_reachable() -> bool:
    """Switch the Hugging Face libraries to offline mode for the rest of the process when the
    Hub cannot be reached (one probe, :func:`reachable`); returns whether they are offline.
    Without the switch every lookup of a model id (a tokenizer, a ``config.json``) retries five
    times with backoff, about 23 s each, printing every retry; offline, a cached copy still
    loads and a missing one fails at once. The variables cover a library imported later;
    ``huggingface_hub`` and ``datasets`` read theirs at import, so a loaded one is switched too."""
    import sys

    if reachable():
        return False
    for var in OFFLINE_VARS:
        os.environ[var] = "1"
    if (constants := sys.modules.get("huggingface_hub.constants")) is not None:
        constants.HF_HUB_OFFLINE = True
    if (config := sys.modules.get("datasets.config")) is not None:
        config.HF_HUB_OFFLINE = True
    return True


@contextmanager
def offline() -> Iterator[None]:
    """``datasets`` and ``huggingface_hub`` in offline mode for the block (their switches are
    read at call time), restored after."""
    import datasets
    import huggingface_hub.constants as hub_constants

    saved = datasets.config.HF_HUB_OFFLINE, hub_constants.HF_HUB_OFFLINE
    datasets.config.HF_HUB_OFFLINE = hub_constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        datasets.config.HF_HUB_OFFLINE, hub_constants.HF_HUB_OFFLINE = saved
