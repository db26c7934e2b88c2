"""Finding a table's runs in the MLflow record.

A grid point's run is the latest one tagged with its ``table.run`` (``tables run`` sets it, here
or in a cluster job). A point no run is tagged with may still have been run: a plain ``python -m
harness -m ...`` sweep of the same settings, recorded under any experiment name. Such a run is
found by its ``config_identity`` tag (:func:`harness.pipeline.record.config_identity`): the point's
config, composed as ``tables run`` composes it, hashed the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.report.tables.spec import GridRun, TableSpec


def recorded_runs(spec: TableSpec, uri: str, scale: str) -> dict[str, list]:
    """Every MLflow run of the table's experiment at ``scale`` by its ``table.run`` tag, latest first:
    its grid points' and the others it records (a pairwise judgement, a challenger's rows)."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
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
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
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
    from mlflow.tracking import MlflowClient

    from harness.pipeline.store import CONFIG_TAG

    client = MlflowClient(tracking_uri=uri)
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


def point_runs(spec: TableSpec, uri: str, scale: str, extra: Sequence[str] = ()) -> dict[str, list]:
    """Each grid point's runs: by its tag, else by its config among the untagged runs; the
    experiment's other runs (a challenger's rows, a point the table file no longer has) are not
    the table's. ``extra``: the overrides the table was run with (``tables run --set``), which its
    points' configs hold."""
    points = {p.key for p in spec.runs(scale)}
    runs = {k: rs for k, rs in recorded_runs(spec, uri, scale).items() if k in points}
    missing: list[GridRun] = [p for p in spec.runs(scale) if not p.skip and p.key not in runs]
    if not missing:
        return runs
    untagged = untagged_runs(uri, scale)
    if not untagged:  # nothing to match: no point is composed
        return runs
    from harness.pipeline.record import config_identity
    from harness.report.tables.grid import compose

    for p in missing:
        if found := untagged.get(config_identity(compose(spec, p, scale, extra))):
            runs[p.key] = found
    return runs
