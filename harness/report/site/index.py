"""The site's index page: everything results/ publishes, the leaderboard first, then the paper
tables per scale (from the index ``tables render`` writes), the quality-vs-cost plots, the
challenge reports and the other reports."""

from __future__ import annotations

from harness.report.site import markdown
from harness.report.site.markdown import SiteMap
from harness.report.site.pages import csv_table
from harness.report.site.sources import Published, Table, heading, read_csv
from harness.report.site.templates import cell, esc, href, link, page, table

PATH = "index.html"


def _summary(rel_readme: str, sitemap: SiteMap) -> str:
    """A scale's README up to its first section: the cells filled, the commit, how it was generated."""
    text = (sitemap.results / rel_readme).read_text(encoding="utf-8")
    lines = []
    for line in text.splitlines():
        if line.startswith("## "):
            break
        if not line.startswith("# "):
            lines.append(line)
    return markdown.render("\n".join(lines), sitemap, rel_readme, PATH, f"summary-{rel_readme.count('/')}")


def _seconds(x) -> str:
    return f"{x:,.0f} s" if isinstance(x, (int, float)) else ""


def tables_list(tables: list[Table], sitemap: SiteMap, table_id: str) -> str:
    rows = []
    for t in tables:
        m = t.meta
        name = cell(link(PATH, f"{t.rel}.html", t.id), raw=True)
        filled = cell(f"{m['filled']}/{m['total']}", numeric=True, sort=m["filled"]) \
            if "filled" in m and "total" in m else cell("")
        figure = cell(link(PATH, t.rel + ".png", "png"), raw=True) if t.has_png and sitemap.asset(t.rel + ".png") \
            else cell("")
        time = cell(f"{_seconds(m.get('computed'))} + {_seconds(m.get('reused'))} reused", numeric=True,
                    sort=m.get("computed")) if "computed" in m else cell("")
        title = m.get("title") or heading((sitemap.results / t.md).read_text(encoding="utf-8")).partition(": ")[2]
        rows.append([name, title, filled, m.get("stand_ins", ""), m.get("why_empty", ""), time, figure])
    return table(table_id, ["table", "title", "cells filled", "stand-ins", "why cells are empty", "compute time",
                            "figure"], rows)


def _scale_section(scale: str, published: Published, sitemap: SiteMap) -> list[str]:
    out = [f'<h2 id="{scale}">Paper tables and figures, {scale} scale</h2>']
    if scale in published.readmes:
        out.append(_summary(published.readmes[scale], sitemap))
    tables = published.tables.get(scale, [])
    indexed = [t for t in tables if t.meta]
    others = [t for t in tables if not t.meta]
    if indexed or (tables and not published.indexed[scale]):
        out.append(tables_list(indexed or tables, sitemap, f"tables-{scale}"))
    if indexed and others:
        out.append("<p>Further tables at this scale (not in its index): "
                   + ", ".join(link(PATH, f"{t.rel}.html", t.id) for t in others) + "</p>")
    missing = published.unrendered.get(scale, [])
    if missing:
        other = {t.id: f"{t.rel}.html" for s, ts in published.tables.items() if s != scale for t in ts}
        out.append(f"<p>No file at {esc(scale)} scale for {len(missing)} tables its index names (no cell "
                   "computed at this scale; the other scale&#x27;s page where there is one): "
                   + ", ".join(link(PATH, other[t], t) if t in other else esc(t) for t in missing) + "</p>")
    if not tables:
        out.append(f'<p class="absent">No table published at {esc(scale)} scale.</p>')
    return out


def _pareto_section(published: Published, sitemap: SiteMap, titles: dict[str, str]) -> list[str]:
    out = ['<h2 id="pareto">Quality against chunking cost, per dataset</h2>',
           "<p>Every chunker configuration the tables ran on a dataset at its most common retrieval setting; "
           "the Pareto front is marked. One page per plot, with its points.</p>"]
    for scale, csvs in published.pareto.items():
        if not csvs:
            continue
        out.append(f'<h3>{esc(scale)} scale</h3><div class="grid">')
        for rel in csvs:
            page_path, png, title = rel[:-4] + ".html", rel[:-4] + ".png", titles.get(rel, rel)
            thumb = (f'<a href="{href(PATH, page_path)}"><img class="thumb" src="{href(PATH, png)}" '
                     f'alt="{esc(title)}"></a>') if sitemap.asset(png) else ""
            out.append(f"<figure>{thumb}<figcaption>{link(PATH, page_path, title)}</figcaption></figure>")
        out.append("</div>")
    if not any(published.pareto.values()):
        out.append('<p class="absent">No quality-vs-cost plot published yet.</p>')
    return out


def _leaderboard_section(published: Published, sitemap: SiteMap, board_page: str | None) -> list[str]:
    out = ['<h2 id="leaderboard">Leaderboard</h2>']
    if board_page is None:
        out.append('<p class="absent">Not published yet: results/leaderboard/ holds no README.md or csv.</p>')
        return out
    md = published.leaderboard_md
    title = heading((sitemap.results / md).read_text(encoding="utf-8")) if md else "the leaderboard"
    out.append(f"<p>{link(PATH, board_page, title or 'The leaderboard')} (the whole page, its notes and files).</p>")
    if published.leaderboard_csvs:
        first = published.leaderboard_csvs[0]
        out.append(csv_table(read_csv(sitemap.results / first), "leaderboard-table", page_path=PATH))
    return out


def _challenges_section(published: Published, sitemap: SiteMap) -> list[str]:
    out = ['<h2 id="challenges">Challenge reports</h2>']
    if not published.challenges:
        out.append('<p class="absent">None published yet (<code>make challenge CHUNKER=...</code> writes '
                   "results/challenges/&lt;name&gt;/&lt;version&gt;/README.md).</p>")
        return out
    rows = []
    for rel in published.challenges:
        parts = rel.split("/")
        name, version = (parts[1], "/".join(parts[2:-1])) if len(parts) > 2 else (rel, "")
        title = heading((sitemap.results / rel).read_text(encoding="utf-8"))
        rows.append([cell(link(PATH, sitemap.pages[rel], name), raw=True), version, title])
    out.append(table("challenges-table", ["challenger", "version", "report"], rows))
    return out


def _others_section(published: Published, sitemap: SiteMap) -> list[str]:
    out = ['<h2 id="other">Other reports and the papers&#x27; numbers</h2>']
    if published.reports:
        out.append("<ul>" + "".join(
            f"<li>{link(PATH, sitemap.pages[r], heading((sitemap.results / r).read_text(encoding='utf-8')) or r)}"
            f" <span class=\"muted\">({esc(r)})</span></li>" for r in published.reports) + "</ul>")
    if published.paper_numbers:
        out.append("<p>The papers&#x27; published numbers, transcribed with their table references: "
                   + ", ".join(link(PATH, r, r.removeprefix("papers/")) for r in published.paper_numbers
                               if sitemap.asset(r)) + "</p>")
    return out


def index_page(published: Published, sitemap: SiteMap, pareto_titles: dict[str, str], board_page: str | None) -> str:
    n_tables = sum(len(v) for v in published.tables.values())
    body = [f"<p>Everything ChunkBench publishes under results/: {n_tables} paper table and figure pages, "
            f"{sum(len(v) for v in published.pareto.values())} quality-vs-cost plots, "
            f"{len(published.challenges)} challenge reports, the leaderboard "
            f"({'published' if board_page else 'not published yet'}). Generated by <code>chunkbench site</code> "
            "from the files alone; do not edit. Every page opens from disk; click a column header to sort.</p>",
            "<p>" + " · ".join(link(PATH, f"#{a}", t) for a, t in (
                ("leaderboard", "leaderboard"), ("smoke", "smoke-scale tables"), ("full", "full-scale tables"),
                ("pareto", "quality vs cost"), ("challenges", "challenges"), ("other", "other reports"))) + "</p>"]
    body += _leaderboard_section(published, sitemap, board_page)
    for scale in published.tables:
        body += _scale_section(scale, published, sitemap)
    body += _pareto_section(published, sitemap, pareto_titles)
    body += _challenges_section(published, sitemap)
    body += _others_section(published, sitemap)
    return page(PATH, "ChunkBench results", "\n".join(body))
