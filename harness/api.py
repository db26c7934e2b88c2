"""ChunkBench from Python: ``harness.evaluate`` runs one benchmark run as ``chunkbench run`` (``python
-m harness``) would, and ``harness.load_runs`` reads the record as a DataFrame.

``evaluate`` composes the same config from the same overrides, runs the same stages through the same
cache, and records the run where the config says (``tracking=none``: nowhere). A chunker object can
be passed instead of a config: the run's config names its class and its plain attributes (numbers,
strings, lists of them), which key its chunks in the cache and identify its run in the record; an
attribute that is not plain enters as a digest of its ``repr`` (an object whose repr holds its
address is then computed again by each process, never confused with another).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from harness.cache import make_key
from harness.chunking.base import Chunker
from harness.types import ConfigError

PLAIN = (str, int, float, bool, type(None))


@dataclass(frozen=True)
class Result:
    """One run's numbers. ``metrics``: every run-level number (means, run statistics, costs), by
    name; ``intervals``: the 95% bootstrap interval of each mean that has one; ``per_query``: one row
    per question (its scores, context and answer); ``run_id``: the MLflow run, None when not recorded."""

    metrics: dict[str, float]
    intervals: dict[str, tuple[float, float]]
    per_query: list[dict[str, Any]]
    per_document: list[dict[str, Any]]
    stages: dict[str, str]
    run_id: str | None
    config: Any  # the composed DictConfig


def _plain(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return isinstance(value, PLAIN) and not (isinstance(value, float) and math.isnan(value))


def describe(chunker: Chunker) -> dict[str, Any]:
    """The config node that stands for ``chunker`` in the run's config, keys and record."""
    if not isinstance(chunker, Chunker):
        raise ConfigError(f"chunker: a harness.Chunker instance, got {type(chunker).__name__}")
    cls = type(chunker)
    state = {k: v for k, v in sorted(vars(chunker).items()) if not k.startswith("_")}
    node: dict[str, Any] = {"_target_": f"{cls.__module__}.{cls.__qualname__}"}
    node.update({k: list(v) if isinstance(v, tuple) else v for k, v in state.items() if _plain(v)})
    if rest := {k: v for k, v in state.items() if not _plain(v)}:
        node["object_state"] = make_key(repr(sorted(rest.items())))
    return node


def checked_overrides(overrides: Any) -> list[str]:
    """``overrides`` as a list of strings; anything else is one ConfigError saying what it got."""
    if isinstance(overrides, str):
        raise ConfigError(f"evaluate: overrides must be a list of strings, got the string {overrides!r}: "
                          f"write [{overrides!r}]")
    if not isinstance(overrides, (list, tuple)):
        raise ConfigError(f"evaluate: overrides must be a list of strings such as ['chunker=sentence'], got "
                          f"{type(overrides).__name__}")
    for i, o in enumerate(overrides):
        if not isinstance(o, str):
            raise ConfigError(f"evaluate: overrides[{i}] must be a string such as 'chunker=sentence', got "
                              f"{type(o).__name__} {o!r}")
    return list(overrides)


T = TypeVar("T")


def outside_callers_run(record: Callable[[], T]) -> T:
    """``record()``, which points MLflow at the run's store, sets its experiment and starts a run,
    leaving the caller's MLflow state as it was: a run the caller has open (``with
    mlflow.start_run():``, on any store) stays theirs and open, since MLflow keeps the open runs
    per thread and the record is made in a thread of its own; the process-wide tracking URI and
    experiment are put back."""
    import mlflow
    from mlflow.tracking import fluent

    uri, experiment = mlflow.get_tracking_uri(), fluent._active_experiment_id  # no public getter for the second
    # set_experiment also exports MLFLOW_EXPERIMENT_ID (for subprocesses): left set, the caller's next
    # start_run on their own store would look up our experiment's id there
    exported = os.environ.get("MLFLOW_EXPERIMENT_ID")
    try:
        if mlflow.active_run() is None:
            return record()
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(record).result()
    finally:
        mlflow.set_tracking_uri(uri)
        fluent._active_experiment_id = experiment
        if exported is None:
            os.environ.pop("MLFLOW_EXPERIMENT_ID", None)
        else:
            os.environ["MLFLOW_EXPERIMENT_ID"] = exported


def evaluate(overrides: Sequence[str] = (), chunker: Chunker | None = None, *, record: bool | None = None,
             log: bool = False) -> Result:
    """One run of ``configs/config.yaml`` with Hydra ``overrides`` (``["chunker=sentence",
    "dataset.limit_docs=1"]``), or with the ``chunker`` object in place of the config's chunker.
    ``record``: None records where the config's ``tracking`` says; False records nothing. ``log``:
    print the stages' lines."""
    from omegaconf import OmegaConf, open_dict

    from harness.pipeline.components import build_components
    from harness.pipeline.naming import default_choices, run_name
    from harness.pipeline.runner import Pipeline
    from harness.quiet import offline_when_local, quiet_logs
    from harness.registry import check_overrides, compose

    quiet_logs()
    overrides = checked_overrides(overrides)
    for name, value in (("record", record), ("log", log)):  # record="no" would be truthy: refuse, not guess
        if not (isinstance(value, bool) or (name == "record" and value is None)):
            raise ConfigError(f"evaluate: {name} must be {'True, False or None' if name == 'record' else 'True or False'}, "
                              f"got {type(value).__name__} {value!r}")
    if record is False:
        overrides.append("tracking=none")
    check_overrides(overrides)  # a misspelt key: a ConfigError naming the nearest valid one
    cfg = compose(overrides)
    if chunker is not None:
        with open_dict(cfg):
            cfg.chunker = describe(chunker)
    offline_when_local(OmegaConf.to_container(cfg, resolve=True))
    components = build_components(cfg, prebuilt={"chunker": chunker} if chunker is not None else None)
    result = Pipeline(cfg, components, log=print if log else (lambda *_: None)).run()
    run_id = None
    if cfg.tracking.enabled:
        from harness.pipeline.record import record_run

        defaults = default_choices()
        choices = {**defaults, **{k: v for k, _, v in (o.partition("=") for o in overrides) if k in defaults}}
        run_id, _ = outside_callers_run(lambda: record_run(cfg, result, run_name(choices, overrides, defaults)))
    means = {k: float(v) for k, v in result.metrics.items() if "/" not in k}
    intervals = {k: (float(result.metrics[f"{k}/ci95_low"]), float(result.metrics[f"{k}/ci95_high"]))
                 for k in means if f"{k}/ci95_low" in result.metrics}
    return Result(means, intervals, result.per_query, result.per_document, dict(result.stages), run_id, cfg)


def load_runs(uri: str | os.PathLike | None = "sqlite:///mlruns.db", experiment: str | None = None):
    """The runs of the store at ``uri`` (every experiment, or ``experiment``) as a pandas DataFrame:
    one row per run, ``metrics.*``, ``params.*`` and ``tags.*`` columns, a tag whose every value
    is a number as a numeric column. ``uri``: a tracking URI (``sqlite:///mlruns.db``, None for it,
    ``http://host:5000``, a database URL) or a ``Path`` to a SQLite store. It only reads: a store
    that MLflow could open only by creating or migrating it, a server that does not answer within
    5 s, or a database without its driver is a :class:`ConfigError`."""
    import mlflow
    import pandas as pd
    from mlflow.exceptions import MlflowException

    from harness.pipeline.preflight import check_record
    from harness.secrets import mask_text

    if uri is None:
        uri = "sqlite:///mlruns.db"
    elif isinstance(uri, os.PathLike):  # a path is the SQLite file (a string without a scheme is MLflow's file store)
        uri = f"sqlite:///{Path(uri).absolute()}"
    if not isinstance(uri, str) or not uri.strip():
        raise ConfigError(f"load_runs: uri must name a store (e.g. sqlite:///mlruns.db), got {uri!r}")
    check_record(uri, "load_runs uri")
    try:
        client = mlflow.MlflowClient(uri)
        found = [e.name for e in client.search_experiments()]
        if experiment is not None and experiment not in found:
            raise ConfigError(f"load_runs: no experiment {experiment!r} in {uri} (experiments: {', '.join(found)})")
        if not found:
            return pd.DataFrame()
        previous = mlflow.get_tracking_uri()
        mlflow.set_tracking_uri(uri)
        try:
            frame = mlflow.search_runs(experiment_names=[experiment] if experiment else found, output_format="pandas")
        finally:
            mlflow.set_tracking_uri(previous)
    except MlflowException as e:  # a server or database that answers, but not as an MLflow store
        first = (str(e.message).strip().splitlines() or ["no message"])[0]
        raise ConfigError(mask_text(f"load_runs: {uri} cannot be read as an MLflow store ({first[:300]})", ())) from None
    for col in [c for c in frame.columns if c.startswith("tags.")]:
        numbers = pd.to_numeric(frame[col], errors="coerce")
        if numbers.notna().sum() == frame[col].notna().sum() and frame[col].notna().any():
            frame[col] = numbers
    return frame
