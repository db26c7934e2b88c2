"""``chunkbench site``: results/ as static HTML in ``results/site/`` (or ``--out``). Generated from the
files alone, in memory first: the same files give the same bytes. The folder is replaced whole
(written beside it, then swapped in), and only when it is empty or a site this command wrote
(its marker file), never another folder; the links are checked once it is written."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from harness.report.site import links, pages, sources
from harness.report.site.index import index_page
from harness.report.site.markdown import SiteMap
from harness.types import ConfigError

MARKER = ".chunkbench-site"  # names a folder this command wrote (and may replace)


@dataclass(frozen=True)
class Built:
    out: Path
    pages: tuple[str, ...]
    assets: tuple[str, ...]
    broken: tuple[links.Broken, ...]


def _plan(published: sources.Published, sitemap: SiteMap) -> str | None:
    """Every page's site path, set before any page is written so that they link to one another;
    returns the leaderboard's page (None: not published)."""
    for scale, rel in published.readmes.items():
        sitemap.pages[rel] = "index.html" if scale == "smoke" else f"index.html#{scale}"
    for tables in published.tables.values():
        for t in tables:
            sitemap.pages[t.md] = f"{t.rel}.html"
    for rel in published.challenge_tables:
        sitemap.pages[f"{rel}.md"] = f"{rel}.html"
    for rel in published.challenges + published.reports:
        sitemap.pages[rel] = rel[:-3] + ".html"
    for scale, csvs in published.pareto.items():
        for rel in csvs:
            sitemap.pages[rel] = rel[:-4] + ".html"
    if published.leaderboard_md is None and not published.leaderboard_csvs:
        return None
    board = "leaderboard/README.html" if published.leaderboard_md else "leaderboard/index.html"
    for rel in [published.leaderboard_md, *published.leaderboard_csvs]:
        if rel:
            sitemap.pages.setdefault(rel, board)
    return board


def render(results: Path, skip: Path | None = None) -> tuple[dict[str, bytes], SiteMap]:
    """Every file of the site by its site path, from ``results`` (``skip``: a folder not read)."""
    results = results.resolve()
    skip_rel = (skip.resolve().relative_to(results).as_posix(),) if skip and skip.resolve().is_relative_to(results) \
        else ()
    published = sources.find(results, skip.resolve() if skip else None)
    sitemap = SiteMap(results, skip=skip_rel)
    board = _plan(published, sitemap)
    html: dict[str, str] = {}
    for scale, tables in published.tables.items():
        for t in tables:
            path, text = pages.table_page(t, sitemap, (f"index.html#{scale}", f"{scale} scale"))
            html[path] = text
    for rel in published.challenge_tables:
        t = sources.Table(rel, "", rel, True, (results / f"{rel}.png").is_file())
        report = next((c for c in published.challenges if rel.startswith(c.rsplit("/", 1)[0] + "/")), None)
        crumb = (sitemap.pages[report], "its challenge report") if report else ("index.html#challenges", "challenges")
        path, text = pages.table_page(t, sitemap, crumb)
        html[path] = text
    titles = {}
    for scale, csvs in published.pareto.items():
        for rel in csvs:
            path, text, titles[rel] = pages.pareto_page(rel, scale, sitemap, pages.table_pages_by_id(
                published.tables.get(scale, [])), ("index.html#pareto", "quality vs cost"))
            html[path] = text
    for rel in published.challenges:
        path, text = pages.markdown_page(rel, sitemap, ("index.html#challenges", "challenges"))
        html[path] = text
    for rel in published.reports:
        path, text = pages.markdown_page(rel, sitemap, ("index.html#other", "other reports"))
        html[path] = text
    if board:
        md = published.leaderboard_md or "leaderboard/README.md"
        sitemap.pages.setdefault(md, board)
        path, text = pages.markdown_page(md, sitemap, ("index.html#leaderboard", "leaderboard"),
                                         published.leaderboard_csvs, "Leaderboard")
        html[path] = text
    html["index.html"] = index_page(published, sitemap, titles, board)
    files = {p: t.encode("utf-8") for p, t in html.items()}
    for rel in sorted(sitemap.assets):
        if rel in files:
            raise ConfigError(f"results/{rel}: both a page and a file of the site")
        files[rel] = (results / rel).read_bytes()
    return dict(sorted(files.items())), sitemap


def _replaceable(out: Path) -> bool:
    return not out.exists() or (out.is_dir() and (not any(out.iterdir()) or (out / MARKER).is_file()))


def build(results: Path, out: Path | None = None) -> Built:
    """The site of ``results`` written to ``out`` (default ``results/site``), its links checked."""
    results = Path(results)
    if not results.is_dir():
        raise ConfigError(f"{results}: no such results folder")
    out = Path(out) if out is not None else results / "site"
    if not _replaceable(out):
        raise ConfigError(f"{out}: not empty and not a site `chunkbench site` wrote (no {MARKER} file): "
                          "give an empty or new folder with --out")
    files, _ = render(results, skip=out)
    staging = out.with_name(f".{out.name}.writing-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    for rel, data in files.items():
        target = staging / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    (staging / MARKER).write_text("written by `chunkbench site`; the folder is replaced whole on each run\n",
                                  encoding="utf-8")
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        out.rename(old)
        staging.rename(out)
        shutil.rmtree(old)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging.rename(out)
    pages_ = tuple(p for p in files if p.endswith(".html"))
    return Built(out, pages_, tuple(p for p in files if not p.endswith(".html")), tuple(links.check(out)))
