"""A table with ``series`` (QChunker's Figure 3): per-chunk perplexity before and after knowledge
completion, recorded by a real pipeline run in MLflow and plotted from the record.

The run's model is scripted (the tests run in seconds): QChunker's segmentation reply does not
parse (its counted fallback tiles the document), every chunk is judged incomplete and rewritten
with a marker, and the marked text scores a lower perplexity."""

import re

import pytest

from harness.report.tables import checks, grid, render
from harness.report.tables import index as tables_index
from harness.types import ConfigError
from tests.conftest import ScriptedLLM
from tests.report.test_tables import write_table

MARK = "（已补全）"


def reply(prompt: str) -> str:
    if "请判断该文本块是否存在缺失必要信息" in prompt:  # the integrity review
        return "是"
    if "对文本块中因信息缺失而模糊的地方进行完善和补充" in prompt:  # knowledge completion
        chunk = re.findall(r"<chunk>(.*?)</chunk>", prompt, re.S)[-1]
        return f"<think>补充背景</think>{chunk}{MARK}"
    return "no segmentation"


def score(prompt: str, text: str) -> list[float]:
    return [-0.5 if MARK in text else -1.5] * max(1, len(text) // 20)


def scripted_llm():
    return ScriptedLLM(reply=reply, score=score)


FIGURE3 = """
title: Demo perplexity figure
source: a test
numbers: NUMBERS
shared: [dataset=crud, dataset.limit_docs=2, dataset.limit_queries=2, chunker=qchunker, retriever=bm25, retriever.scope=corpus,
         responder=none, metrics=qchunker_rewrite, llm=none, llm._target_=tests.report.test_series_figure.scripted_llm]
rows:
  qchunker: {label: QChunker, overrides: []}
  qchunker_3b: {label: QChunker-3B, overrides: [], missing: weights not public}
groups:
  crud: {label: CRUD, overrides: []}
metrics:
  before: {metric: rewrite_ppl_original, label: PPL original, digits: 2}
  after: {metric: rewrite_ppl_rewritten, label: PPL rewritten, digits: 2}
  n: {metric: rewrite_ppl_chunks_total, label: chunks, digits: 0}
series:
  label: rewritten chunk
  y_label: perplexity
  lines:
    original: {series: rewrite_ppl_original_chunks, label: Original}
    rewritten: {series: rewrite_ppl_rewritten_chunks, label: Rewritten}
"""


def test_series_spec_is_checked(tmp_path):
    t = write_table(tmp_path / "a", FIGURE3)
    assert [(ln.key, ln.series, ln.label) for ln in t.series.lines] == [
        ("original", "rewrite_ppl_original_chunks", "Original"), ("rewritten", "rewrite_ppl_rewritten_chunks", "Rewritten")]
    assert t.series.label == "rewritten chunk" and not t.is_figure
    with pytest.raises(ConfigError, match="series: needs"):
        write_table(tmp_path / "b", FIGURE3.replace("series: rewrite_ppl_original_chunks, ", ""))
    with pytest.raises(ConfigError, match="no x axis and no swept row"):
        write_table(tmp_path / "c", FIGURE3 + "x: {param: chunker.seed, values: [0, 1]}\n")


def test_a_series_no_metric_records_fails_validation(tmp_path):
    t = write_table(tmp_path, FIGURE3.replace("series: rewrite_ppl_rewritten_chunks", "series: rewrite_ppl_after"))
    with pytest.raises(ConfigError, match="records the series rewrite_ppl_after"):
        checks.validate(t, "smoke")


@pytest.mark.slow
def test_per_chunk_perplexities_are_recorded_and_plotted_from_mlflow(tmp_path):
    import matplotlib.image

    from harness.report.tables import figure

    t = write_table(tmp_path, FIGURE3)
    checks.validate(t, "smoke")
    uri = f"sqlite:///{tmp_path / 'mlruns.db'}"
    outcomes = grid.run_table(t, "smoke", [f"tracking.uri={uri}", f"cache.dir={tmp_path / 'cache'}"],
                              log=lambda *_: None)
    assert [o.status for o in outcomes] == ["finished"], outcomes[0].note
    rendered = render.build(t, uri, "smoke")  # from the record: metrics and the per_document.jsonl artifact
    values = rendered.series[("qchunker", "crud")]
    n = len(values["original"])
    assert n > 2 and len(values["rewritten"]) == n  # every fallback chunk of the two documents was rewritten
    assert all(after < before for before, after in zip(values["original"], values["rewritten"]))
    cells = {k: rendered.cells[("qchunker", f"crud/{k}")].ours for k in ("before", "after", "n")}
    assert cells["n"] == n and cells["after"] < cells["before"]
    assert sum(values["original"]) / n == pytest.approx(cells["before"])
    assert rendered.cells[("qchunker_3b", "crud/before")].note == "not built"
    fig = figure.draw(rendered)
    [ax] = fig.axes  # the missing row gets no panel
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("rewritten chunk", "perplexity")
    assert [line.get_label() for line in ax.get_lines()] == ["Original", "Rewritten"]
    assert list(ax.get_lines()[0].get_xdata()) == list(range(1, n + 1))
    paths = render.write(rendered, tmp_path / "results")
    png = matplotlib.image.imread(paths[-1])
    assert paths[-1].suffix == ".png" and png.shape[0] > 100 and png.std() > 0
    assert "| CRUD PPL original |" in paths[0].read_text()
    index = tables_index.write([rendered], {}, [t.id], out=tmp_path / "results").read_text()
    assert "([png](demo/t1.png))" in index
