"""Finding a table's runs in the MLflow record.

A grid point's runs are those tagged with its ``table.run`` (``tables run`` sets it, here or in a
cluster job) that were run at the point's config under the overrides in force now (``--set``): a
run of the point under other overrides is another point (a BM25 run is no baseline of a dense
table). A point no run is tagged with may still have been run: a plain ``python -m harness -m
...`` sweep of the same settings, recorded under any experiment name. Such a run is found by its
``config_identity`` tag (:func:`harness.pipeline.record.config_identity`): the point's config,
composed as ``tables run`` composes it, hashed the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.pipeline.store import CONFIG_TAG, open_store
from harness.report.tables.grid import SET_TAG, compose, set_tag
from harness.report.tables.spec import GridRun, TableSpec
from harness.types import ConfigError


def _client(uri: str):
    """A client of the store at ``uri``, made ready first under its lock: MLflow creates a new SQLite
    store in place, and two processes (two challenges) creating one at once collide
    (``duplicate column name``)."""
    from mlflow.tracking import MlflowClient

    open_store(uri)
    return MlflowClient(tracking_uri=uri)


def recorded_runs(spec: TableSpec, uri: str, scale: str) -> dict[str, list]:
    """Every MLflow run of the table's experiment at ``scale`` by its ``table.run`` tag, latest first:
    its grid points' and the others it records (a pairwise judgement, a challenger's rows)."""
    client = _client(uri)
    exp = client.get_experiment_by_name(spec.experiment)
    if exp is None:
        return {}
    runs = client.search_runs([exp.experiment_id], filter_string=f"tags.`table.scale` = '{scale}'",
                              order_by=["attributes.start_time DESC"], max_results=10000)
    out: dict[str, list] = {}
    for r in runs:
        out.setdefault(r.data.tags.get("table.run", ""), []).append(r)
    return out


def table_runs(uri: str, scale: str) -> list:
    """Every finished run of every table's experiment (``tables/...``) at ``scale``, latest first."""
    client = _client(uri)
    experiments = [e.experiment_id for e in client.search_experiments() if e.name.startswith("tables/")]
    out, token = [], None
    while experiments:
        page = client.search_runs(experiments, filter_string=f"tags.`table.scale` = '{scale}' and "
                                  "attributes.status = 'FINISHED'", order_by=["attributes.start_time DESC"],
                                  max_results=5000, page_token=token)
        out += page
        token = page.token
        if not token:
            break
    return out


def untagged_runs(uri: str, scale: str) -> dict[str, list]:
    """The finished runs at ``scale`` that no table tagged, by their config identity, latest first."""
    client = _client(uri)
    experiments = [e.experiment_id for e in client.search_experiments()]
    out: dict[str, list] = {}
    token = None
    while experiments:
        page = client.search_runs(experiments, filter_string=f"tags.scale = '{scale}' and attributes.status = 'FINISHED'",
                                  order_by=["attributes.start_time DESC"], max_results=5000, page_token=token)
        for r in page:
            if "table.run" not in r.data.tags and CONFIG_TAG in r.data.tags:
                out.setdefault(r.data.tags[CONFIG_TAG], []).append(r)
        token = page.token
        if not token:
            break
    return out


_IDENTITIES: dict[tuple, str] = {}  # (experiment, point, scale, extra) -> config identity


def _identity(spec: TableSpec, point: GridRun, scale: str, extra: tuple[str, ...]) -> str:
    """A point's config identity under ``extra``, composed once per process (a challenge asks twice
    per table: for the baselines to run, then to render)."""
    from harness.pipeline.record import config_identity

    key = (spec.experiment, point, scale, extra)  # all that compose() reads
    if key not in _IDENTITIES:
        try:
            _IDENTITIES[key] = config_identity(compose(spec, point, scale, extra))
        except Exception as e:  # Hydra's own errors: one line naming the point
            raise ConfigError(f"table {spec.id} ({point.key}): {str(e).strip().splitlines()[0]}") from None
    return _IDENTITIES[key]


def point_runs(spec: TableSpec, uri: str, scale: str, extra: Sequence[str] = ()) -> dict[str, list]:
    """Each grid point's runs at its config under ``extra`` (the overrides in force: ``--set``), by
    its tag, else by its config among the untagged runs; the experiment's other runs (a
    challenger's rows, a point the table file no longer has) are not the table's.

    A tagged run counts when its :data:`SET_TAG` (the overrides it was run with, normalised by
    :func:`config_overrides`) equals ``extra``'s, else when its config identity is the point's
    composed with ``extra``. The first test costs nothing and settles every run a table's own
    ``tables run`` or challenge recorded under the same overrides; a point is composed (about 10 ms
    with its group choices composed before, 100 ms for the first point of a set of choices: 558
    smoke points in 6.5 s to 17.5 s) only for a run recorded under overrides written otherwise (a
    ``--set`` that restates a default) or before the tag existed, so the usual ``tables render``
    composes nothing. Equal tags take the table file and the config files as they are, as reading
    the record takes the code as it is; a run recorded under other overrides never counts unless
    its config is the point's. A run that carries neither tag cannot be placed and does not count."""
    extra = tuple(extra)
    wanted = set_tag(extra)
    recorded = recorded_runs(spec, uri, scale)
    runs: dict[str, list] = {}
    for p in spec.runs(scale):
        same = [r for r in recorded.get(p.key, ()) if r.data.tags.get(SET_TAG) == wanted
                or (CONFIG_TAG in r.data.tags and r.data.tags[CONFIG_TAG] == _identity(spec, p, scale, extra))]
        if same:
            runs[p.key] = same
    missing: list[GridRun] = [p for p in spec.runs(scale) if not p.skip and p.key not in runs]
    if not missing:
        return runs
    untagged = untagged_runs(uri, scale)
    if not untagged:  # nothing to match: no point is composed
        return runs
    for p in missing:
        if found := untagged.get(_identity(spec, p, scale, extra)):
            runs[p.key] = found
    return runs
