"""The site's pages but the index: a paper table (our value beside the paper's, stand-ins and
deviations marked, its caption, figure and the runs behind it), a quality-vs-cost plot, and a
markdown report (a challenge, the leaderboard, performance). Each returns its HTML; every text is
escaped (:func:`harness.report.site.templates.esc`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.report.site import markdown
from harness.report.site.markdown import SiteMap
from harness.report.site.sources import TABLE_HEADER, Csv, Table, heading, read_csv
from harness.report.site.templates import cell, esc, href, link, page, table

RUN_ID = re.compile(r"\b[0-9a-f]{32}\b")  # an MLflow run id
EXPERIMENT = re.compile(r"`((?:tables|sensitivity|challenge)/[^`\s]+)`")  # an MLflow experiment the md names
RUN_COLUMNS = ("run_id", "run_ids", "runs", "mlflow_run", "mlflow_runs")
KNOWN = ("row", "column", "ours", "ci95_low", "ci95_high", "std", "paper", "diff", "not_comparable", "note")
LEGEND = ('<p class="muted">Each row is one cell of the table: ours (with its bootstrap 95% interval) beside the '
          'paper&#x27;s published value and, where the point is the paper&#x27;s own setup, ours − paper. Marks: '
          '<span class="tag stand-in">stand-in</span> a bundled model or sample runs in place of the paper&#x27;s; '
          '<span class="tag deviation">deviation</span> a setting differs from the paper&#x27;s setup; either makes '
          'the paper&#x27;s value not comparable. An empty ours is a cell not computed, its note says why. Click a '
          'header to sort.</p>')


def number(text: str) -> float | None:
    try:
        x = float(text)
    except (TypeError, ValueError):
        return None
    return x if x == x else None  # NaN: no number


def shown(x: float) -> str:
    """A value as the page shows it (the csv keeps every digit; the sort uses them)."""
    return f"{x:.0f}" if abs(x) >= 1e4 else f"{x:.2f}" if abs(x) >= 0.01 or x == 0 else f"{x:.2e}"


def value_cell(text: str) -> dict:
    x = number(text)
    return cell(shown(x), numeric=True, sort=repr(x)) if x is not None else cell(text)


def marks(reason: str) -> str:
    """``not_comparable`` ("bundled all-MiniLM-L6-v2, chunker.llm") as stand-in and deviation tags."""
    parts = [p.strip() for p in reason.split(", ") if p.strip()]
    return "".join(f'<span class="tag {"stand-in" if p.startswith("bundled") else "deviation"}">{esc(p)}</span>'
                   for p in parts)


def cells_table(data: Csv, table_id: str = "cells") -> str:
    """A paper table's csv (row, column, ours, ..., paper, diff, note, not_comparable) as one sortable
    row per cell; columns it has beyond those follow, as they are."""
    extra = [h for h in data.header if h not in KNOWN and h not in ("n_runs", "paper_std")]
    headers = ["row", "column", "ours", "95% interval", "± std", "paper", "ours − paper", "not comparable", "note",
               *extra]
    rows = []
    for r in data.dicts():
        lo, hi = number(r.get("ci95_low", "")), number(r.get("ci95_high", ""))
        interval = cell(f"[{shown(lo)}, {shown(hi)}]", numeric=True, sort=repr(lo)) if lo is not None and hi is not None \
            else cell("")
        paper = value_cell(r.get("paper", ""))
        if r.get("paper_std") and paper["numeric"]:
            paper["html"] += f" ± {esc(shown(number(r['paper_std']) or 0.0))}"
        ours = value_cell(r.get("ours", ""))
        if not r.get("ours"):
            ours = cell("—", cls="empty", sort="")
        note = r.get("note", "")
        if number(r.get("n_runs", "")) and number(r["n_runs"]) > 1:
            note = "; ".join(x for x in (note, f"mean of {r['n_runs']} runs (the row's sweep)") if x)
        rows.append([r.get("row", ""), r.get("column", ""), ours, interval, value_cell(r.get("std", "")), paper,
                     value_cell(r.get("diff", "")), cell(marks(r.get("not_comparable", "")), raw=True), note,
                     *(value_cell(r.get(h, "")) for h in extra)])
    return table(table_id, headers, rows)


def csv_table(data: Csv, table_id: str, links: dict[int, dict[str, str]] | None = None, page_path: str = "") -> str:
    """Any csv (header row + rows) as a sortable table; ``links``: column index -> {value: site path}."""
    rows = []
    for r in data.rows:
        row = []
        for i, v in enumerate(r):
            target = (links or {}).get(i, {}).get(v)
            row.append(cell(link(page_path, target, v), raw=True) if target else value_cell(v))
        rows.append(row)
    return table(table_id, data.header, rows)


def runs_section(t: Table, md_text: str, data: Csv | None) -> str:
    """The MLflow runs behind a table, as the files name them (no server: the command that opens them)."""
    ids: set[str] = set(RUN_ID.findall(md_text))
    if data is not None:
        for col in (h for h in data.header if h in RUN_COLUMNS):
            for r in data.dicts():
                ids.update(RUN_ID.findall(r.get(col, "")))
    own = f"<p>Each table is one MLflow experiment, <code>tables/{esc(t.id)}</code>, its runs at this scale " \
          f"tagged <code>table.scale = {esc(t.scale)}</code>.</p>" if t.scale else ""
    named = sorted(set(EXPERIMENT.findall(md_text)) - {f"tables/{t.id}"})
    lines = ['<h2 id="runs">The runs behind it</h2>', own]
    if named:
        lines.append("<p>Experiments its files name: " + ", ".join(f"<code>{esc(e)}</code>" for e in named) + ".</p>")
    lines.append("<p>There is no server behind these pages: open the MLflow store the table was rendered from "
                 "with <code>make mlflow-ui</code> (the local store: <code>mlflow ui --backend-store-uri "
                 "sqlite:///mlruns.db</code>) and pick the experiment.</p>")
    if ids:
        lines.append(f"<p>Runs its files name ({len(ids)}); one of them: "
                     f"<code>MLFLOW_TRACKING_URI=sqlite:///mlruns.db mlflow runs describe --run-id RUN_ID</code></p>")
        lines.append("<ul>" + "".join(f"<li><code>{esc(i)}</code></li>" for i in sorted(ids)) + "</ul>")
    else:
        lines.append('<p class="muted">Its files name no run ids.</p>')
    return "\n".join(lines)


def table_page(t: Table, sitemap: SiteMap, crumb: tuple[str, str]) -> tuple[str, str]:
    """The page of a paper table or figure (site path ``<rel>.html``)."""
    path = f"{t.rel}.html"
    md_text = (sitemap.results / t.md).read_text(encoding="utf-8")
    title = heading(md_text) or str(t.meta.get("title") or t.id)
    caption, grid, after = markdown.split_caption(md_text)
    caption = "\n".join(line for line in caption.splitlines() if not line.startswith("# "))
    body = [markdown.render(caption, sitemap, t.md, path, "caption")]
    if t.meta:
        m = t.meta
        body.append(f'<p class="muted">{esc(m.get("filled", "?"))} of {esc(m.get("total", "?"))} cells filled; '
                    f'stand-ins: {esc(m.get("stand_ins", ""))}; rendered at {esc(m.get("commit", "?"))} on '
                    f'{esc(m.get("date", "?"))}.</p>')
    files = [link(path, sitemap.asset(f"{t.rel}{s}") or "", f"{t.id.split('/')[-1]}{s}")
             for s in (".md", ".csv", ".tex", ".png") if sitemap.exists(f"{t.rel}{s}")]
    body.append(f"<p>Files: {' · '.join(files)}</p>")
    if t.has_png:
        body.append(f'<img class="figure" src="{href(path, sitemap.asset(t.rel + ".png") or "")}" '
                    f'alt="{esc(title)}">')
    data = read_csv(sitemap.results / f"{t.rel}.csv") if t.has_csv else None
    if data is not None:
        body.append("<h2 id=\"ours\">Ours beside the paper</h2>")
        if data.header[:3] == TABLE_HEADER and "paper" in data.header:
            body += [LEGEND, cells_table(data)]
        else:
            body.append(csv_table(data, "cells", page_path=path))
    if grid:
        body.append('<details><summary>The table as laid out in its markdown file</summary>'
                    + markdown.render(grid, sitemap, t.md, path, "grid") + "</details>")
    if after.strip():
        body.append(markdown.render(after, sitemap, t.md, path, "after"))
    for i, extra in enumerate(t.extra_csvs, 1):
        sitemap.asset(extra)
        body.append(f"<h2>{link(path, extra, extra.rsplit('/', 1)[-1])}</h2>")
        body.append(csv_table(read_csv(sitemap.results / extra), f"extra-{i}", page_path=path))
    body.append(runs_section(t, md_text, data))
    return path, page(path, title, "\n".join(body), [crumb])


def pareto_page(rel_csv: str, scale: str, sitemap: SiteMap, table_pages: dict[str, str],
                crumb: tuple[str, str]) -> tuple[str, str, str]:
    """A quality-vs-cost plot and its points (site path ``pareto/<dataset>.html``); also its title."""
    path = rel_csv[:-4] + ".html"
    data = read_csv(sitemap.results / rel_csv)
    meta = dict(c.split(": ", 1) for c in data.comments if ": " in c)
    title = f"Quality against chunking cost: {meta.get('dataset', rel_csv)} ({scale} scale)"
    body = ["<ul>" + "".join(f"<li>{esc(c)}</li>" for c in data.comments) + "</ul>"]
    png = rel_csv[:-4] + ".png"
    if sitemap.asset(png):
        body.append(f'<img class="figure" src="{href(path, png)}" alt="{esc(title)}">')
    sitemap.asset(rel_csv)
    body.append(f"<p>Points: {link(path, rel_csv, rel_csv.rsplit('/', 1)[-1])} (pareto = 1: on the front). "
                "A table name links to its page.</p>")
    links = {i: table_pages for i, h in enumerate(data.header) if h in ("tables", "table")}
    # a cell may name several tables; only an exact table id links
    body.append(csv_table(data, "points", links, path))
    return path, page(path, title, "\n".join(body), [crumb]), title


def markdown_page(rel_md: str, sitemap: SiteMap, crumb: tuple[str, str], csvs: Sequence[str] = (),
                  fallback_title: str = "") -> tuple[str, str]:
    """A markdown report of results/ as a page (site path: the file's with ``.html``); ``csvs``: csv
    files shown below it as sortable tables (the leaderboard's)."""
    path = sitemap.pages.get(rel_md, rel_md[:-3] + ".html")
    text = (sitemap.results / rel_md).read_text(encoding="utf-8") if sitemap.exists(rel_md) else ""
    title = heading(text) or fallback_title or rel_md
    text = "\n".join(line for line in text.splitlines() if line.strip() != f"# {title}")
    body = [markdown.render(text, sitemap, rel_md, path, "md")] if text else []
    if sitemap.exists(rel_md):
        sitemap.asset(rel_md)
        body.append(f'<p class="muted">Source: {link(path, rel_md, rel_md)}</p>')
    for i, rel in enumerate(csvs, 1):
        sitemap.asset(rel)
        body.append(f"<h2>{link(path, rel, rel.rsplit('/', 1)[-1])}</h2>")
        body.append(csv_table(read_csv(sitemap.results / rel), f"csv-{i}", page_path=path))
    return path, page(path, title, "\n".join(body), [crumb])


def table_pages_by_id(tables: Sequence[Table]) -> dict[str, str]:
    return {t.id: f"{t.rel}.html" for t in tables}
