"""What a challenge will compute, said before it computes anything, with an estimate of the time.

Per table: the challenger's points (those its code already recorded are read, not run), the
baseline points read from the record and those to run, and how many of the latter call an LLM.
The estimate is the table's mean seconds a point in the committed results index
(``results/index.json``, ``results/full/index.json``: what the table's runs computed plus what
they read from the cache, over its points at that scale), times the points to run. A mean: an LLM
baseline takes far longer than it (in a fresh clone, two LLM baselines on one stand-in took 725 of
a first challenge's 881 CPU seconds), so the lines say how many points call one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from harness.report.challenge.rows import LEFT_OUT, Challenged, calls_llm
from harness.report.tables import index
from harness.report.tables.render import RESULTS
from harness.report.tables.spec import GridRun


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def lines(todo: Sequence[Challenged], missing: Mapping[str, list[GridRun]], scale: str,
          results: Mapping[str, index.Row] | None = None) -> list[str]:
    """The plan, a line per table and one in all (``missing``: per table id, the baseline points
    the record lacks; ``results``: the index's rows, read from the committed index by default)."""
    folder = RESULTS / "full" if scale == "full" else RESULTS
    if results is None:
        results = index.load(folder, scale)
    out, total, unknown, llm_all = [], 0.0, [], 0
    for t in todo:
        s, mine, todo_base = t.spec, len(t.mine(scale)), missing[t.spec.id]
        base = [p for p in t.base.runs(scale) if not p.skip]
        rows = {r.key: r for r in t.base.rows}
        llm = sum(calls_llm(t.base, rows[p.row], scale) for p in todo_base)
        llm_all += llm
        row = results.get(s.id)
        points = sum(p.skip in (None, LEFT_OUT) for p in t.base.runs(scale))  # as the index's runs were
        if row is not None and points:
            per = (row.computed + row.reused) / points
            total += per * (mine + len(todo_base))
            where = (folder / "index.json").relative_to(RESULTS.parent).as_posix()
            estimate = f"~{per:.0f} s a point ({where}) -> ~{_minutes(per * (mine + len(todo_base)))}"
        else:
            unknown.append(s.id)
            estimate = "no recorded timing for this table"
        out.append(f"plan [{s.id}]: {mine} challenger point(s) (read instead where this code recorded them); "
                   f"baselines: {len(base) - len(todo_base)} read from the record, {len(todo_base)} to run"
                   + (f" ({llm} calling an LLM)" if llm else "") + f"; {estimate}")
    left_out = sorted({label for t in todo for label in t.left_out})
    if len(unknown) == len(todo):  # nothing to estimate from: say so rather than "about 0 s"
        head = f"plan: {len(todo)} table(s), no estimate (no recorded timing for {', '.join(unknown)})"
    else:
        head = (f"plan: {len(todo)} table(s), about {_minutes(total)} of CPU time at the tables' mean seconds a point"
                + (f" (and the unknown time of {', '.join(unknown)})" if unknown else ""))
    out.append(head
               + (f"; {llm_all} baseline point(s) call an LLM and take far longer than a table's mean: "
                  f"--no-llm-baselines leaves them out" if llm_all else "")
               + (f"; left out by --no-llm-baselines: {', '.join(left_out)}" if left_out else ""))
    return out
