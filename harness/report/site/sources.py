"""What results/ publishes, found on disk: the paper tables per scale (``<paper>/<table>.{md,csv,png}``
at smoke scale, ``full/<paper>/<table>.*`` at full scale, with the index ``tables render`` writes,
``index.json``), the quality-vs-cost plots (``pareto/``), the challenge reports
(``challenges/**/README.md``), the leaderboard (``leaderboard/``) and the other reports
(``performance.md``, ``scale.md``). Read only; every list is sorted, so the site is the same for the
same files."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

TABLE_HEADER = ("row", "column", "ours")  # a paper table's cells (results/<paper>/<table>.csv)
NOT_PAPERS = {"papers", "pareto", "full", "challenges", "leaderboard", "site"}
SCALES = (("smoke", ""), ("full", "full"))  # (scale, its folder under results/)


@dataclass(frozen=True)
class Csv:
    """A csv of results/: its leading ``# `` lines (a citation, a plot's dataset), header and rows."""

    comments: tuple[str, ...]
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def dicts(self) -> list[dict[str, str]]:
        return [dict(zip(self.header, r)) for r in self.rows]


def read_csv(path: Path) -> Csv:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    comments = []
    while lines and lines[0].startswith("#"):
        comments.append(lines.pop(0)[1:].strip())
    rows = list(csv.reader(io.StringIO("".join(lines))))
    header = tuple(rows[0]) if rows else ()
    return Csv(tuple(comments), header, tuple(tuple(r) for r in rows[1:] if r))


@dataclass(frozen=True)
class Table:
    """A paper table or figure at one scale: ``rel`` its results/-relative path without suffix
    (``chroma/table2``, ``full/chroma/table2``); ``meta``: its entry in the scale's index.json."""

    id: str
    scale: str
    rel: str
    has_csv: bool
    has_png: bool
    extra_csvs: tuple[str, ...] = ()  # results/-relative: figure2_correlation.csv beside figure2
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def md(self) -> str:
        return f"{self.rel}.md"


@dataclass
class Published:
    tables: dict[str, list[Table]]        # scale -> its tables (indexed ones first, in the index's order)
    unrendered: dict[str, list[str]]      # scale -> tables its index names with no file there
    indexed: dict[str, bool]              # scale -> whether an index.json was read
    readmes: dict[str, str]               # scale -> results/-relative README.md
    pareto: dict[str, list[str]]          # scale -> results/-relative csvs (stem.png beside them)
    challenges: list[str]                 # results/-relative README.md of each report, sorted
    leaderboard_md: str | None
    leaderboard_csvs: list[str]
    reports: list[str]                    # other top-level markdown (performance.md, scale.md)
    paper_numbers: list[str]              # papers/**/*.csv
    challenge_tables: list[str] = field(default_factory=list)  # md+csv under challenges/ (rel without suffix)


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _files(folder: Path, pattern: str, skip: Path | None) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob(pattern) if p.is_file() and not (skip and p.is_relative_to(skip))
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def is_table_csv(path: Path) -> bool:
    with path.open(encoding="utf-8") as f:
        first = f.readline()
    return tuple(first.strip().split(",")[:3]) == TABLE_HEADER


def _scale_tables(results: Path, scale: str, folder: str, skip: Path | None) -> tuple[list[Table], bool, list[str]]:
    """The scale's tables (indexed ones first), whether it has an index.json, and the tables its
    index names that have no file at this scale (no cell computed there)."""
    base = results / folder if folder else results
    prefix = f"{folder}/" if folder else ""
    index_path = base / "index.json"
    meta = {}
    if index_path.is_file():
        for entry in json.loads(index_path.read_text(encoding="utf-8")).get("tables", []):
            meta[str(entry.get("table", ""))] = entry
    found = {}
    for md in _files(base, "*/*.md", skip):
        paper = md.parent.name
        if paper in NOT_PAPERS:
            continue
        table_id = f"{paper}/{md.stem}"
        csvs = sorted(p.name for p in md.parent.glob(f"{md.stem}_*.csv")
                      if not (md.parent / f"{p.stem}.md").exists())
        found[table_id] = Table(table_id, scale, prefix + table_id, md.with_suffix(".csv").is_file(),
                                md.with_suffix(".png").is_file(),
                                tuple(f"{prefix}{paper}/{c}" for c in csvs), meta.get(table_id, {}))
    missing = [t for t in meta if t not in found]
    ordered = [found.pop(t) for t in meta if t in found] + [found[t] for t in sorted(found)]
    return ordered, index_path.is_file(), missing


def find(results: Path, skip: Path | None = None) -> Published:
    """Everything results/ publishes; ``skip``: a folder never read (the site being written)."""
    tables, indexed, readmes, pareto, unrendered = {}, {}, {}, {}, {}
    for scale, folder in SCALES:
        base = results / folder if folder else results
        prefix = f"{folder}/" if folder else ""
        tables[scale], indexed[scale], unrendered[scale] = _scale_tables(results, scale, folder, skip)
        if (base / "README.md").is_file():
            readmes[scale] = prefix + "README.md"
        pareto[scale] = [_rel(p, results) for p in _files(base / "pareto", "*.csv", skip)]
    challenges = [_rel(p, results) for p in _files(results / "challenges", "**/README.md", skip)]
    challenge_tables = [_rel(p.with_suffix(""), results) for p in _files(results / "challenges", "**/*.md", skip)
                        if p.name != "README.md" and p.with_suffix(".csv").is_file()
                        and is_table_csv(p.with_suffix(".csv"))]
    board = results / "leaderboard"
    return Published(
        tables=tables, unrendered=unrendered, indexed=indexed, readmes=readmes, pareto=pareto, challenges=challenges,
        leaderboard_md="leaderboard/README.md" if (board / "README.md").is_file() else None,
        leaderboard_csvs=[_rel(p, results) for p in _files(board, "*.csv", skip)],
        reports=[_rel(p, results) for p in _files(results, "*.md", skip) if p.name != "README.md"],
        paper_numbers=[_rel(p, results) for p in _files(results / "papers", "**/*.csv", skip)],
        challenge_tables=challenge_tables)


def heading(markdown: str) -> str:
    """A markdown file's first ``# `` heading (its title), or ''."""
    for line in markdown.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return ""
