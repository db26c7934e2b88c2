"""The work of one stage of one grid point, per model role: how many documents and questions the
point reads, and from them the tokens each role prefills, decodes (at most) and embeds.

Sizes come from the data where it is here (``--scale smoke``: the bundled samples, loaded and
counted), else from the paper: the table's declared dataset (``paper.datasets``: documents,
questions) and the papers' dataset statistics in ``results/papers/`` (words, sentences or tokens
per document), then what they leave out from the publishers or a count (:mod:`.dataset_sizes`),
turned into cl100k tokens with the ratios measured on the bundled documents (:mod:`.measure`).
Each figure is printed with what it rests on. A size nothing gives is unknown, and so is every
work that needs it: never 0.

Per role (``Role.path``; the stage is the one that reads the role's config group):

    chunker.llm         documents x tokens/doc / 1000 x the method's measured prompt (and scored)
                        tokens per 1,000 document tokens; decode: its calls x their reply budget
                        (the point's own ``max_tokens``-like settings), an upper bound
    chunker.embedder    the same with the method's measured embedded tokens
    retriever[.embedder] the method's indexed chunk tokens per 1,000 document tokens, plus the
                        questions (each embedded once)
    responder.llm       per question: its template, the question and a full context
                        (``responder.max_context_tokens``, else ``context.budget``), an upper
                        bound; decode: the template's (or the responder's) ``max_tokens``
    metrics.fact_cov.llm per question: one extraction and ``repetitions`` coverage calls, each
                        its template, the question and a full-length response; decode: ``max_tokens``
    metrics.chunkscore.* every indexed chunk scored with and without the document (llm) or
                        embedded (embedder)
    metrics.rewrite_perplexity.llm  every chunk's source and rewrite scored: 2 x the document tokens
    metrics.qa_similarity.embedder  per question: the question and its answer (at its reply budget)
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness.pipeline.roles import Role
from harness.report.tables.dataset_sizes import doc_tokens, size_figures
from harness.report.tables.measure import scalars

PAPERS = Path(__file__).resolve().parents[3] / "results" / "papers"


@dataclass(frozen=True)
class DataSize:
    documents: float | None
    questions: float | None
    doc_tokens: float | None        # cl100k tokens per document
    question_tokens: float | None   # cl100k tokens per question
    source: str                     # where the numbers came from

    def doc_k(self) -> float | None:
        """Thousands of document tokens in all (what a chunker reads)."""
        if self.documents is None or self.doc_tokens is None:
            return None
        return self.documents * self.doc_tokens / 1000


@dataclass
class RoleWork:
    """What one role does in one stage: tokens in (prefill or embedded) and out (decoded)."""

    role: str
    model: str
    kind: str                  # llm | embedder | encoder
    backend: str
    tensor_parallel: int = 1
    quantization: str | None = None     # vLLM's llm.quantization: the weights' bytes per parameter (Hardware.fit)
    memory_share: float = 0.9           # vLLM's gpu_memory_utilization: the share of each GPU the engine takes
    prefill: float = 0.0       # llm: prompt and scored tokens
    decode: float = 0.0        # llm: reply-budget tokens (an upper bound)
    embedded: float = 0.0      # embedder / encoder
    calls: float = 0.0
    missing: str | None = None  # why this work is unknown (then the numbers above mean nothing)
    notes: list[str] = field(default_factory=list)

    @property
    def served(self) -> bool:
        """Behind an OpenAI-compatible API: tokens, no GPU of ours."""
        return self.backend in ("OpenAILLM", "OpenAIEmbedder")


# --- dataset sizes -------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _csv(path: Path) -> list[dict[str, str]]:
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip() and not ln.startswith("#")]
    return list(csv.DictReader(lines))


def _stat(rel: str, row: str, column: str) -> float | None:
    for r in _csv(PAPERS / rel):
        if r.get("row") == row and r.get("column") == column and r.get("value") not in (None, "", "-"):
            return float(r["value"])
    return None


def _qu(dataset: str, table: str) -> dict[str, str] | None:
    for r in _csv(PAPERS / "qu_et_al_tables4_5_datasets.csv"):
        if r["dataset"].lower() == dataset.lower() and r["table"] == table:
            return r
    return None


def loader(ds: dict[str, Any]) -> str:
    """The dataset's config choice, from its loader's module (``harness.data.hicbench.X``: hicbench)."""
    parts = str(ds.get("_target_") or "").split(".")
    return parts[2] if len(parts) > 3 else str(ds.get("name") or "")


# Loaders whose every row is one question on its own document (their docstrings say so), so a
# paper that counts questions counts documents: LongBench's rows carry their context, MC-indexing's
# NQ test set is 586 "question-article pairs" (harness/data/nq.py: one row = one question on one page).
ONE_DOCUMENT_PER_QUESTION = ("longbench", "nq")
# Loaders whose bundled sample is the whole released dataset (its SOURCE.md says so): a full-scale
# point is sized on the data itself, as a smoke point is.
COMPLETE_HERE = ("chroma",)
# RAGBench subsets whose test split ships whole (harness/data/samples/ragbench/SOURCE.md: the Hub files)
RAGBENCH_BUNDLED = ("covidqa", "delucionqa", "expertqa")


def complete_here(ds: dict[str, Any]) -> dict[str, Any] | None:
    """The dataset config that loads a full-scale point's whole data from what ships with the
    package (its own, or the bundled source of the same files), or None where it does not ship."""
    if loader(ds) in COMPLETE_HERE:
        return ds
    subsets = [ds.get("subset")] if isinstance(ds.get("subset"), str) else list(ds.get("subset") or ())
    if loader(ds) == "ragbench" and ds.get("split", "test") == "test" and subsets \
            and set(subsets) <= set(RAGBENCH_BUNDLED):
        return {**ds, "source": "bundled", "path": None}
    return None


def longbench(ds: dict[str, Any], work: dict[str, Any]) -> tuple[float, float, str] | None:
    """(rows, cl100k tokens per row's document, source) of the LongBench subsets a point loads,
    from LongBench's published statistics: each row is one document and one question."""
    from harness.data.longbench import QA_SUBSETS, ZH_SUBSETS

    # QChunker's MultiFieldQA_zh is LongBench's 200 rows (harness/data/samples/multifieldqa_zh/SOURCE.md)
    subset = "multifieldqa_zh" if loader(ds) == "multifieldqa_zh" else ds.get("subset") or "all"
    names = QA_SUBSETS if subset == "all" else (subset,) if isinstance(subset, str) else tuple(subset)
    rows = tokens = 0.0
    for name in names:
        n, length = (_stat("longbench/task_stats.csv", name, f"stats/{c}") for c in ("samples", "avg_len"))
        if n is None or length is None or (name in ZH_SUBSETS and "cl100k_per_zh_char" not in work):
            return None
        rows += n
        tokens += n * length * (work["cl100k_per_zh_char"] if name in ZH_SUBSETS else work["cl100k_per_word"])
    return rows, tokens / rows, (f"[cited: LongBench task.md] ({'+'.join(names)}: {rows:g} rows, mean length x "
                                 f"{work['cl100k_per_word']} cl100k tokens/word, zh x {work.get('cl100k_per_zh_char')}/character)")


def paper_length(ds: dict[str, Any], work: dict[str, Any]) -> tuple[float | None, float | None, str]:
    """(cl100k tokens per document, per question, source) from the papers' statistics for the
    dataset a point loads (its resolved ``dataset`` config), or (None, None, why not)."""
    name, subset = loader(ds), str(ds.get("subset") or "")
    per_word, per_sentence = work["cl100k_per_word"], work["words_per_sentence"] * work["cl100k_per_word"]
    if name in ("longbench", "multifieldqa_zh") and (stats := longbench(ds, work)):
        return stats[1], None, stats[2]
    hichunk = {"qasper": "qasper", "gutenqa": "gutenqa", "ohrbench": "ohrbench"}.get(name)
    if name == "hicbench":
        hichunk = {"HiCBench": "hicbench_t1", "qasper_all": "qasper", "OHRBench_sub": "ohrbench",
                   "GutenQA": "gutenqa"}.get(subset)
    if hichunk:
        words = _stat("hichunk/table2.csv", hichunk, "stats/word_d")
        wq = _stat("hichunk/table2.csv", hichunk, "stats/word_q")
        if words is not None:
            return (words * 1000 * per_word, wq * per_word if wq else None,
                    f"{words:g}k words/doc [cited: HiChunk Table 2, {hichunk}] x {per_word} cl100k tokens/word")
    if name in ("nq", "wikiweb2m"):
        row = f"{name}_{'train' if ds.get('split') == 'train' else 'test'}"
        tokens = _stat("mc_indexing/table1.csv", row, "stats/tokens_doc")
        if tokens is not None:
            return tokens * 1000, None, f"{tokens:g}k cl100k tokens/doc [cited: MC-indexing Table 1, {row}]"
    qu_name = {"beir_stitched": str(ds.get("corpus") or ""), "ragbench": subset}.get(name, name)
    for table in ("4", "5"):
        r = _qu(qu_name, table) if qu_name else None
        if r is None:
            continue
        sent = r["sent_per_doc_stitched"] if name == "beir_stitched" else r["sent_per_doc"]
        if sent:
            return (float(sent) * per_sentence, None,
                    f"{sent} sentences/doc [cited: Qu et al. Table {table}, {r['dataset']}] x {work['words_per_sentence']} "
                    f"words/sentence x {per_word} cl100k tokens/word")
    if found := doc_tokens(size_figures(name, ds), work):
        return found[0], None, found[1]
    return None, None, f"no published document length for {name}{'/' + subset if subset else ''}"


def paper_size(declared: list[dict[str, Any]], ds: dict[str, Any], work: dict[str, Any]) -> DataSize:
    """A full-scale point's size: the table's declared dataset entry, the papers' statistics,
    the sizes file for what they leave out, then the loader's own caps (``limit_docs``,
    ``limit_queries``); its source marks each figure ``[cited: ...]``, ``[counted: ...]`` or
    ``[assumed: ...]``."""
    entry = declared[0] if declared else {}
    docs, questions = entry.get("documents"), entry.get("questions")
    block = f"[cited: the table's paper block{', ' + str(entry['cite']) if entry.get('cite') else ''}]"
    marks = {"documents": block if docs is not None else "", "questions": block if questions is not None else ""}
    tokens, q_tokens, where = paper_length(ds, work)
    if loader(ds) == "longbench" and (stats := longbench(ds, work)):
        questions = stats[0] if questions is None else questions
        marks["questions"] = marks["questions"] or "[cited: LongBench task.md]"
    if docs is None and loader(ds) in ONE_DOCUMENT_PER_QUESTION:
        docs, marks["documents"] = questions, "(one per question)"
    figures = size_figures(loader(ds), ds)
    for key in ("documents", "questions"):   # what the paper leaves out: its publisher's or a count
        if (docs if key == "documents" else questions) is None and key in figures:
            f = figures[key]
            docs, questions = (f.value, questions) if key == "documents" else (docs, f.value)
            marks[key] = f.mark()
    for key, what, value in (("limit_docs", "documents", docs), ("limit_queries", "questions", questions)):
        cap = ds.get(key)
        if cap is not None and value is not None and cap < value:
            docs, questions = (cap, questions) if key == "limit_docs" else (docs, cap)
            marks[what] = f"({key} of {value:g} {marks[what]})".replace(" )", ")")
    q_tokens = q_tokens or work.get("question_cl100k")
    source = (f"{entry.get('name', 'undeclared dataset')}: {_said(docs, 'documents', marks)}, "
              f"{_said(questions, 'questions', marks)}; {where}")
    return DataSize(None if docs is None else float(docs), None if questions is None else float(questions),
                    tokens, q_tokens, source)


def _said(n: float | None, what: str, marks: dict[str, str]) -> str:
    return f"? (not declared) {what}" if n is None else f"{n:g} {what} {marks[what]}".rstrip()


# --- work per role ----------------------------------------------------------------------------

def method_entry(chunker: dict[str, Any], work: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The measured method with the point's chunker class whose settings agree most with the
    point's (a setting the point changes, e.g. a window, is read from the point where it is a
    reply budget, else taken at the measured default)."""
    target, mine = chunker.get("_target_"), scalars(chunker)
    found = [(name, e) for name, e in work["methods"].items() if e["target"] == target]
    if not found:
        return None
    def agreement(entry: dict[str, Any]) -> int:   # settings alike, less settings that differ
        return sum(1 if mine.get(k) == v else -1 for k, v in entry["settings"].items() if k in mine)

    return max(found, key=lambda ne: agreement(ne[1]))


def _template(responder: dict[str, Any], ds: dict[str, Any]) -> dict[str, Any]:
    """The template the responder picks: by the question's task (a LongBench subset), else the
    dataset's name (a null name is ``<loader>/<subset>``), else ``default``."""
    templates = responder.get("templates") or {}
    name = responder.get("template", "auto")
    dataset = str(ds.get("name") or f"{loader(ds)}/{ds.get('subset') or ds.get('corpus') or ''}")
    if name == "auto":
        name = next((n for n in (ds.get("subset"), dataset, dataset.rsplit("/", 1)[-1]) if n in templates), "default")
    return templates.get(name) or {}


def role_work(role: Role, slices: dict[str, Any], size: DataSize, work: dict[str, Any], count) -> RoleWork:
    """The work of ``role`` at a point whose resolved config groups are ``slices``; ``count``
    counts cl100k tokens (template overheads)."""
    out = RoleWork(role.path, role.model, role.kind, role.backend, int(role.settings.get("tensor_parallel_size") or 1),
                   role.settings.get("quantization"), float(role.settings.get("gpu_memory_utilization") or 0.9))
    group = role.path.split(".")[0].split("[")[0]
    doc_k, q = size.doc_k(), size.questions
    wp = work["wordpiece_per_cl100k"]
    method = method_entry(slices.get("chunker") or {}, work) if group in ("chunker", "retriever", "metrics") else None
    per = method[1]["per_1k_doc_tokens"] if method else None
    if method:
        out.notes.append(f"method work measured as chunker={method[0]}")

    def need(*values) -> bool:
        if any(v is None for v in values):
            out.missing = out.missing or f"unknown: {size.source}"
            return False
        return True

    if group == "chunker":
        if per is None:
            out.missing = f"no measured work for {slices['chunker'].get('_target_')}: run scripts/measure_method_work.py"
        elif need(doc_k) and role.kind == "llm":
            settings = scalars(slices["chunker"])
            budget = sum(n * float(settings.get(p) or 0) for p, n in per["llm_calls_by_budget"].items())
            out.prefill = doc_k * (per["llm_prompt"] + per["llm_scored"])
            out.decode = doc_k * (budget + per["llm_decode_unattributed"])
            out.calls = doc_k * per["llm_calls"]
        elif need(doc_k):
            out.embedded = doc_k * per["embedded"]
    elif group == "retriever":
        if per is None:
            out.missing = f"no measured chunks for {slices['chunker'].get('_target_')}: run scripts/measure_method_work.py"
        elif need(doc_k):
            out.embedded = doc_k * per["indexed"]
            if q is not None and size.question_tokens is not None:
                out.embedded += q * size.question_tokens * wp
            else:  # a few hundred short texts beside the corpus: the documents' work still counts
                out.notes.append("the questions' embeddings are not counted: their number is not declared")
    elif group == "responder" and need(q, size.question_tokens):
        r = slices["responder"]
        tpl = _template(r, slices.get("dataset") or {})
        context = r.get("max_context_tokens") or (slices.get("context") or {}).get("budget")
        if context is None and need(size.doc_tokens):
            context = size.doc_tokens
            out.notes.append("no context cap: the whole document counted")
        overhead = count(str(tpl.get("prompt", "")).replace("{context}", "").replace("{input}", ""))
        out.prefill = q * (overhead + size.question_tokens + float(context or 0))
        out.decode = q * float(r.get("max_tokens") or tpl.get("max_tokens") or 0)
        out.calls = q
    elif group == "metrics":
        _metric_work(out, role, slices, size, per, work, count, need)
    elif group not in ("chunker", "retriever", "responder"):
        out.missing = f"the work of role {role.path} is not modelled"
    return out


def _metric_work(out: RoleWork, role: Role, slices, size: DataSize, per, work, count, need) -> None:
    metric = role.path.split(".")[1]
    node = (slices.get("metrics") or {}).get(metric) or {}
    doc_k, q = size.doc_k(), size.questions
    if metric == "fact_cov" and need(q, size.question_tokens):
        from harness.metrics.fact_cov import COVERAGE_PROMPT, EXTRACTION_PROMPT

        reps = int(node.get("repetitions") or 1)
        answer = float((slices.get("responder") or {}).get("max_tokens") or node.get("max_tokens") or 0)
        prompt = count(COVERAGE_PROMPT) * reps + count(EXTRACTION_PROMPT) + (reps + 1) * (size.question_tokens + answer)
        out.prefill, out.decode = q * prompt, q * (reps + 1) * float(node.get("max_tokens") or 0)
        out.calls = q * (reps + 1)
        out.notes.append("fact extraction counted for every question (skipped where the data ships facts)")
    elif metric == "chunkscore" and per is not None and need(doc_k):
        if role.kind == "llm":
            out.prefill = 2 * doc_k * per["indexed"] / work["wordpiece_per_cl100k"]
        else:
            out.embedded = doc_k * per["indexed"]
    elif metric == "qa_similarity" and need(q, size.question_tokens):
        r = slices.get("responder") or {}
        answer = float(r.get("max_tokens") or _template(r, slices.get("dataset") or {}).get("max_tokens") or 0)
        out.embedded = q * (size.question_tokens + answer) * work["wordpiece_per_cl100k"]
        out.notes.append("each question and its answer embedded once, the answer at its reply budget (an upper bound)")
    elif metric == "rewrite_perplexity" and need(doc_k):
        out.prefill = 2 * doc_k * 1000
        out.notes.append("every chunk counted as rewritten (an upper bound)")
    elif not out.missing and out.prefill == out.embedded == 0:
        out.missing = out.missing or f"the work of role {role.path} is not modelled"

