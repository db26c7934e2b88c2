"""Every point of a ``-m`` sweep checked before its first job, as ``tables run`` checks a table's grid.

Hydra's basic sweeper composes each job's config only when the job starts, and a job's bad
parameter ends the sweep there: ``-m chunker.size=50,0,100`` recorded 50, failed on 0 and never
ran 100. :func:`check_sweep_points` expands the sweep as the sweeper does, composes every point
and builds its components (which loads no model and reads no data), and fails in one line naming
the first bad point and how many more there are. Run when a sweep starts, after the preflight
(:class:`SweepPoints`, a Hydra callback); a sweeper of its own (``hydra/sweeper=table``) checks its
own points.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from harness.secrets import MASK, is_secret_name
from harness.types import ConfigError, Unavailable

BASIC_SWEEPER = "BasicSweeper"  # the tail of Hydra's default sweeper's `_target_`


def sweep_points(overrides: Sequence[str], params: Mapping[str, Any] | None = None) -> tuple[list[list[str]], set[str]]:
    """The jobs' overrides, in the sweeper's order, and the keys that are swept (``params``:
    ``hydra.sweeper.params``, which the sweeper puts before the command line's)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides([*(f"{k}={v}" for k, v in (params or {}).items()),
                                                       *overrides])
    swept = {o.get_key_element() for o in parsed if o.is_sweep_override()}
    return [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch], swept


@contextmanager
def outside_the_running_app() -> Iterator[None]:
    """Hydra's global state set aside while a point is composed: the sweep's own app holds it,
    and composing (``initialize_config_dir``) refuses to start while another has it."""
    from hydra.core.global_hydra import GlobalHydra

    held = GlobalHydra.instance().hydra
    GlobalHydra.instance().clear()
    try:
        yield
    finally:
        GlobalHydra.instance().clear()
        GlobalHydra.instance().hydra = held


def point_problem(overrides: Sequence[str]) -> str | None:
    """Why one point cannot run (what its job would stop with), or None: it composes, its
    components build and its objective is one its metrics record. A model or file that is not
    here is no problem: the job fetches it (``tables validate`` calls it a status too)."""
    from harness import registry
    from harness.pipeline.components import build_components
    from harness.pipeline.preflight import check_objective

    try:
        with outside_the_running_app():
            cfg = registry.compose(overrides)
            built = build_components(cfg)
            check_objective(cfg.objective, built.metrics, overrides)
    except Unavailable:
        return None
    except ConfigError as e:
        return " ".join(str(e).split())
    except Exception as e:  # a composition error of Hydra's, a bad interpolation: the job would stop on it too
        return " ".join(f"{type(e).__name__}: {e}".split())
    return None


def label(job: Sequence[str], swept: set[str]) -> str:
    """The point by its swept values, secrets masked."""
    parts = []
    for o in job:
        key, _, value = o.partition("=")
        if key in swept:
            parts.append(f"{key}={MASK if is_secret_name(key.rsplit('.', 1)[-1]) else value}")
    return " ".join(parts)


def check_sweep_points(overrides: Sequence[str], params: Mapping[str, Any] | None = None) -> None:
    """Raise ConfigError naming the first point of the sweep that cannot run, before any job."""
    jobs, swept = sweep_points(overrides, params)
    if not jobs:  # range(10,0), an empty list: Hydra would launch nothing and exit 0
        raise ConfigError(f"the sweep over {', '.join(sorted(swept)) or 'its overrides'} has no point "
                          f"(an empty range or list); no job was run")
    bad = [(i, problem) for i, job in enumerate(jobs) if (problem := point_problem(job))]
    if bad:
        i, problem = bad[0]
        more = f" (and {len(bad) - 1} more point{'s' if len(bad) > 2 else ''})" if len(bad) > 1 else ""
        raise ConfigError(f"sweep point {i + 1} of {len(jobs)} ({label(jobs[i], swept)}): {problem}{more}; "
                          f"no job was run")


def check_sweep(config: DictConfig) -> None:
    """:func:`check_sweep_points` for the sweep ``config`` starts (Hydra's, at multirun start)."""
    sweeper = config.hydra.sweeper
    if not str(sweeper.get("_target_", "")).endswith(BASIC_SWEEPER):
        return
    check_sweep_points(list(config.hydra.overrides.task), sweeper.get("params"))


class SweepPoints(Callback):
    """Hydra callback (configs/config.yaml, ``hydra.callbacks.sweep_points``): :func:`check_sweep`
    when a sweep starts; a bad point prints one line and exits with status 2."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        try:
            check_sweep(config)
        except ConfigError as e:
            print(f"chunkbench: error: {e}", file=sys.stderr)
            sys.exit(2)
