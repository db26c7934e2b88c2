"""Cutting a dataset down for smoke runs: the first N items, or N drawn with a seed.

A seeded draw keeps the items in their original order, so a sample reads like the dataset
it came from; each list is drawn from its own stream, so the query sample does not move when
only the document limit changes.
"""

from __future__ import annotations

import random
from typing import Sequence, TypeVar

from harness.types import ConfigError

T = TypeVar("T")


def check_limit(name: str, value: int | None, minimum: int = 0) -> int | None:
    """Config check for a count parameter: null or an integer >= ``minimum``."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < minimum):
        raise ConfigError(f"{name} must be null or an integer >= {minimum}, got {value!r}")
    return value


def check_seed(seed) -> int | None:
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ConfigError(f"seed must be null (take the first N) or an integer, got {seed!r}")
    return seed


def take(items: Sequence[T], n: int | None, seed: int | None, stream: str) -> list[T]:
    """``n`` of ``items`` (all when ``n`` is None): the first ones, or a seeded random draw."""
    items = list(items)
    if n is None or n >= len(items):
        return items
    if seed is None:
        return items[:n]
    chosen = random.Random(f"{seed}/{stream}").sample(range(len(items)), n)
    return [items[i] for i in sorted(chosen)]
