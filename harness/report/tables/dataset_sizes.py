"""Dataset sizes that the tables' papers leave out, each with what it rests on: the figures of
``results/papers/dataset_sizes.csv`` (its header says how a row applies), which ``tables plan``
reads after a table's own ``paper:`` block and the papers' dataset statistics (:mod:`.workload`).

A figure is ``cited`` (the dataset's publisher, or the table's paper elsewhere), ``counted`` (in
the publisher's own files, by ChunkBench) or ``assumed`` (a declared assumption, the last resort);
the plan prints each with its basis and source, so an assumed size is never mistaken for a
published one.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from harness.types import ConfigError

SIZES = Path(__file__).resolve().parents[3] / "results" / "papers" / "dataset_sizes.csv"
FIGURES = ("documents", "questions", "words_per_doc", "zh_chars_per_doc", "tokens_per_doc")
BASES = ("cited", "counted", "assumed")


@dataclass(frozen=True)
class SizeFigure:
    value: float
    basis: str      # cited | counted | assumed
    source: str

    def mark(self) -> str:
        """How the plan prints what the figure rests on."""
        return f"[{self.basis}: {self.source}]"


@dataclass(frozen=True)
class _Row:
    dataset: str
    when: tuple[tuple[str, Any], ...]
    figure: str
    value: SizeFigure


@lru_cache(maxsize=4)
def _rows(path: Path = SIZES) -> tuple[_Row, ...]:
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip() and not ln.startswith("#")]
    out = []
    for i, r in enumerate(csv.DictReader(lines), start=1):
        where = f"{path.name}, data row {i}"
        if r.get("figure") not in FIGURES or r.get("basis") not in BASES or not (r.get("source") or "").strip():
            raise ConfigError(f"{where}: figure must be one of {', '.join(FIGURES)}, basis one of "
                              f"{', '.join(BASES)}, and source must say where the figure comes from")
        try:
            value = float(r["value"])
            when = tuple((k.strip(), yaml.safe_load(v)) for k, _, v in
                         (c.partition("=") for c in (r.get("when") or "").split(";") if c.strip()))
        except (ValueError, yaml.YAMLError) as e:
            raise ConfigError(f"{where}: {' '.join(str(e).split())[:160]}") from None
        out.append(_Row(r["dataset"], when, r["figure"], SizeFigure(value, r["basis"], r["source"].strip())))
    return tuple(out)


def size_figures(dataset: str, ds: dict[str, Any], path: Path = SIZES) -> dict[str, SizeFigure]:
    """The figures for a point that loads ``dataset`` (the loader's name) with the resolved config
    ``ds``: per figure, the applying row with the most conditions."""
    best: dict[str, tuple[int, SizeFigure]] = {}
    for row in _rows(path):
        if row.dataset != dataset or any(ds.get(k) != v for k, v in row.when):
            continue
        if row.figure not in best or len(row.when) > best[row.figure][0]:
            best[row.figure] = (len(row.when), row.value)
    return {k: v for k, (_, v) in best.items()}


def doc_tokens(figures: dict[str, SizeFigure], work: dict[str, Any]) -> tuple[float, str] | None:
    """cl100k tokens per document from a length figure, with the ratio that turns it into tokens
    (measured on the bundled documents, :mod:`.measure`), and its printed source."""
    if f := figures.get("tokens_per_doc"):
        return f.value, f"{f.value:g} cl100k tokens/doc {f.mark()}"
    if f := figures.get("words_per_doc"):
        return (f.value * work["cl100k_per_word"],
                f"{f.value:g} words/doc {f.mark()} x {work['cl100k_per_word']} cl100k tokens/word")
    if (f := figures.get("zh_chars_per_doc")) and "cl100k_per_zh_char" in work:
        return (f.value * work["cl100k_per_zh_char"],
                f"{f.value:g} characters/doc {f.mark()} x {work['cl100k_per_zh_char']} cl100k tokens/character")
    return None
