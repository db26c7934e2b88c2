"""``results/README.md``, the index of the rendered tables, and ``results/index.json``, its rows
as data.

One summary line first (cells filled, tables complete / partial / empty, the commit and date of
the render, what computing them took), then a row per table: cells filled, its stand-ins by short
name (the long text stays in the table's caption), why its empty cells are empty, and what its
runs computed beside what they read from the cache that other tables' runs computed. A render of
some tables (``--tables``) rewrites their rows and keeps the others as ``index.json`` holds them.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from harness.report.tables import blocks
from harness.report.tables.cells import Rendered
from harness.report.tables.costs import Cost, table_cost
from harness.report.tables.render import RESULTS

WHY_WIDTH = 70   # characters of one reason in the "why empty" column
WHY_CELL = 130   # characters of the reasons shown together


@dataclass(frozen=True)
class Row:
    table: str
    title: str
    scale: str
    filled: int
    total: int
    figure: bool          # a png beside the table
    stand_ins: str        # short names of the stand-ins its points run
    why_empty: str        # its empty cells' commonest reasons, with counts
    computed: float       # seconds its own runs computed
    reused: float         # seconds of other runs' work its runs read from the cache
    unknown: int          # stages read from a cache no recorded run computed
    commit: str
    date: str

    @property
    def cost(self) -> Cost:
        return Cost(self.computed, self.reused, self.unknown)


def short_stand_ins(reasons: tuple[str, ...]) -> str:
    """``bundled all-MiniLM-L6-v2, bundled sample of gutenqa, chunker.window`` as
    ``all-MiniLM-L6-v2, gutenqa sample, 1 setting``: the settings are named in the caption."""
    names, samples, settings = [], [], 0
    for r in reasons:
        if m := re.fullmatch(r"bundled sample of (.+)", r):
            samples.append(m.group(1))
        elif re.fullmatch(r"[\w]+(\.[\w]+)+", r):  # a config key the paper's setup fixes otherwise
            settings += 1
        else:
            names.append(r.removeprefix("bundled "))
    if samples:
        names.append(" + ".join(samples) + (" samples" if len(samples) > 1 else " sample"))
    if settings:
        names.append(f"{settings} setting{'s' * (settings > 1)}")
    return ", ".join(names) or "none"


def why_empty(t: Rendered) -> str:
    """The reasons of the empty cells, commonest first: a skipped point's own reason, an axis not
    built, a run not recorded yet or failed."""
    skip = {(p.row, p.group): p.skip for p in t.spec.runs(t.scale) if p.skip}
    missing = {a.key: f"{a.label} not built: {a.missing}" for a in (*t.spec.rows, *t.spec.groups) if a.missing}
    found: Counter[str] = Counter()
    for (row, col), c in t.cells.items():
        if c.ours is not None:
            continue
        group = col.split("/", 1)[0]
        why = skip.get((row, group)) or missing.get(row) or missing.get(group) or c.note or "empty"
        found[why if len(why) <= WHY_WIDTH else why[:WHY_WIDTH - 1].rstrip() + "…"] += 1
    found.update({c.note or "empty": 1 for c in t.pairwise.values() if c.ours is None})
    top: list[str] = []
    for why, n in found.most_common():  # the commonest, as many as fit the column
        if top and len("; ".join([*top, f"{n}: {why}"])) > WHY_CELL:
            break
        top.append(f"{n}: {why}")
    more = len(found) - len(top)
    return "; ".join(top + ([f"+{more} other reason{'s' * (more > 1)}"] if more else [])) or "none"


def has_figure(t: Rendered) -> bool:
    return bool(blocks.of(t.spec))   # every block draws the table's PNG


def row(t: Rendered, everyone: dict, commit: str, date: str) -> Row:
    """The index row of a rendered table; ``everyone``: the work every run of the record computed
    (:func:`harness.report.tables.costs.computed`)."""
    cost = table_cost(t.history, everyone)
    return Row(t.spec.id, t.spec.title, t.scale, t.filled, t.total, has_figure(t), short_stand_ins(t.not_comparable),
               why_empty(t), round(cost.computed, 1), round(cost.reused, 1), cost.unknown, commit, date)


def render_stamp() -> tuple[str, str]:
    """The commit the render ran at (``+`` when the code differs from it) and today's date (UTC)."""
    from harness.pipeline.record import code_changed, git_state

    commit = git_state()["git_sha"][:7] + ("+" if code_changed() else "")
    return commit, datetime.now(timezone.utc).date().isoformat()


def load(out: Path, scale: str) -> dict[str, Row]:
    """The rows ``out/index.json`` holds at ``scale`` (none when it is absent or of an older form)."""
    path = out / "index.json"
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))["tables"]
        return {r["table"]: Row(**r) for r in rows if r["scale"] == scale}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def summary(rows: list[Row]) -> str:
    filled, total = sum(r.filled for r in rows), sum(r.total for r in rows)
    complete = sum(r.filled == r.total for r in rows)
    empty = sum(r.filled == 0 for r in rows)
    commits = Counter(r.commit for r in rows)
    dates = sorted({r.date for r in rows})
    when = (f"rendered at commit {commits.most_common(1)[0][0]}" + (
        f" (and {len(commits) - 1} other)" if len(commits) > 1 else "")
        + f" on {dates[-1]}" + (f" (the oldest row {dates[0]})" if len(dates) > 1 else ""))
    scales = "/".join(sorted({r.scale for r in rows}))
    computed, unknown = sum(r.computed for r in rows), sum(r.unknown for r in rows)
    return (f"**{filled:,} of {total:,} cells filled** in {len(rows)} tables at {scales} scale: "
            f"{complete} complete, {len(rows) - complete - empty} partial, {empty} empty; {when}; "
            f"their runs computed for {computed:,.0f} s" + (
                f" ({unknown} cached stages untimed)" if unknown else "") + ".")


def other_scale(out: Path, scale: str) -> list[str]:
    """A line linking the index of the other scale, where one is rendered: the smoke renders in
    ``results/``, the full-scale ones (the papers' setup, computed here) in ``results/full/``."""
    if scale == "full" and (out.parent / "index.json").is_file():
        return ["Full-scale renders: the papers' own setup, where it was computed here. The smoke-scale index "
                "(every table on bundled stand-ins): [../README.md](../README.md).", ""]
    if scale != "full" and (out / "full" / "index.json").is_file():
        return ["Full-scale renders (the papers' own setup, where it was computed here), beside these: "
                "[full/README.md](full/README.md).", ""]
    return []


def markdown(rows: list[Row], pareto: list[tuple[str, str, Path, int]], out: Path) -> str:
    scale = rows[0].scale if rows else "smoke"
    empty = []
    if scale == "full" and any(r.filled for r in rows):  # most tables need a GPU cluster: name them once
        empty = [r.table for r in rows if r.filled == 0]
        rows = [r for r in rows if r.filled > 0]
    lines = ["# Results", "", summary(rows), "", *other_scale(out, scale),
             "Generated by `make reproduce-tables` from the MLflow record; do not edit. The papers' published",
             "numbers, transcribed with their table references, are in `papers/`. Compute time: the seconds",
             "the table's own runs spent computing, then those of the cached work it read that other tables'",
             "runs computed; an untimed stage read cache entries no recorded run computed with its config",
             "(documents another configuration chunked, or a cache from elsewhere).", "",
             "## Paper tables and figures", "",
             "| table | title | cells filled | stand-ins | why cells are empty | compute time |",
             "|---|---|---|---|---|---|"]
    latest = Counter(r.commit for r in rows).most_common(1)[0][0] if rows else ""
    for r in rows:
        link = f"[{r.table}]({r.table}.md)" + (f" ([png]({r.table}.png))" if r.figure else "")
        older = f" (rendered at {r.commit}, {r.date})" if r.commit != latest else ""
        lines.append(f"| {link} | {r.title} | {r.filled}/{r.total} | {r.stand_ins} | {r.why_empty}{older} | "
                     f"{r.cost.text()} |")
    if empty:
        lines += ["", f"No cell computed at full scale here ({len(empty)} tables: their models or data need a GPU "
                  f"cluster or the Hub): {', '.join(empty)}."]
    if pareto:
        lines += ["", "## Quality against chunking cost, per dataset", "",
                  "Every chunker configuration the tables ran on a dataset, at that dataset's most common retrieval",
                  "setting (named in each plot); the Pareto front is marked and labelled. CSVs beside the plots add",
                  "the embedded texts and LLM calls per document.", "",
                  "| dataset | quality metric | chunkers | plot |", "|---|---|---|---|"]
        for dataset, metric, png, n in pareto:
            rel = png.relative_to(out).as_posix()
            lines.append(f"| {dataset} | {metric} | {n} | [{rel}]({rel}) ([csv]({rel[:-4]}.csv)) |")
    return "\n".join(lines) + "\n"


def write(rendered: list[Rendered], everyone: dict, order: list[str],
          pareto: list[tuple[str, str, Path, int]] = (), out: Path | None = None) -> Path:
    """``out/README.md`` and ``out/index.json``: the rows of ``rendered``, and for the other tables
    of ``order`` (every table id, in the index's order) the rows ``index.json`` already holds."""
    out = out or RESULTS
    commit, date = render_stamp()
    scale = rendered[0].scale if rendered else "smoke"
    rows = {**load(out, scale), **{t.spec.id: row(t, everyone, commit, date) for t in rendered}}
    ordered = [rows[i] for i in order if i in rows]
    out.mkdir(parents=True, exist_ok=True)
    (out / "index.json").write_text(json.dumps({"tables": [asdict(r) for r in ordered]}, indent=1) + "\n",
                                    encoding="utf-8")
    path = out / "README.md"
    path.write_text(markdown(ordered, list(pareto), out), encoding="utf-8")
    return path
