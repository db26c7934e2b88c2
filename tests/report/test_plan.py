"""`tables plan` and `tables calibrate`: the arithmetic on a toy table (points, shared stages once,
GPU-hours = tokens / (tokens/s) / 3600 per role), the hardware file's errors, the smoke grid's
point count, a full-scale plan of every table offline, and calibrate's file writing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from harness.report.tables import spec as tables
from harness.report.tables.hardware import Figure, load_hardware, write_measured
from harness.report.tables.measure import load_method_work
from harness.report.tables.plan import plan_tables
from harness.report.tables.plan_cost import report
from harness.text import Tokenizer
from harness.types import ConfigError

ENCODER_RATE, PREFILL_RATE, DECODE_RATE = 1000.0, 2000.0, 100.0


def _hardware(tmp_path, **changes):
    raw = {
        "gpu": "toy GPU",
        "assumptions": ["toy figures"],
        "llm": [{"name": "tiny", "up_to_b": 1,
                 "prefill_tokens_per_s": {"value": PREFILL_RATE, "source": "toy"},
                 "decode_tokens_per_s": {"value": DECODE_RATE, "source": "toy"}}],
        "encoders": [{"name": "small", "up_to_m": 100, "tokens_per_s": {"value": ENCODER_RATE, "source": "toy"}}],
        "params": {"bundled": 0.05},
    }
    raw.update(changes)
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


# Per 1,000 document tokens: fixed chunks index 1,000 tokens; 1 cl100k token per word.
WORK = {"corpus": "toy", "cl100k_per_word": 1.0, "wordpiece_per_cl100k": 1.0, "words_per_sentence": 20.0,
        "question_cl100k": 5.0,
        "methods": {"fixed": {"target": "harness.chunking.fixed.FixedSizeChunker", "uses_llm": False,
                              "uses_embedder": False, "settings": {"size": 200},
                              "per_1k_doc_tokens": {"llm_calls": 0, "llm_prompt": 0, "llm_scored": 0,
                                                    "llm_calls_by_budget": {}, "llm_decode_unattributed": 0,
                                                    "embedded": 0, "indexed": 1000.0}}}}

# Two rows that chunk and retrieve alike and assemble apart; the responder is the bundled model.
TOY = """
title: toy
source: a test
numbers: results/papers/hichunk/table3.csv
shared: [responder=llm, responder.max_context_tokens=100]
rows:
  a: {overrides: [chunker=fixed]}
  b: {overrides: [chunker=fixed, context.budget=1024]}
groups:
  g: {overrides: [dataset=qasper]}
metrics:
  r: {metric: evidence_recall}
paper:
  datasets:
    - {group: g, name: toy Qasper, documents: 10, questions: 20}
"""


@pytest.fixture
def toy(tmp_path):
    (tmp_path / "toy").mkdir()
    path = tmp_path / "toy" / "t.yaml"
    path.write_text(TOY, encoding="utf-8")
    return tables.load_spec(path, tmp_path)


def test_toy_table_arithmetic_counts_shared_stages_once(toy, tmp_path):
    hw = load_hardware(_hardware(tmp_path))
    plans, planner = plan_tables([toy], "full", [f"cache.dir={tmp_path / 'cache'}"], WORK)
    r = report(plans, planner, hw)
    t = r["tables"][0]
    assert (t["points"], t["jobs"], t["not_run_at_scale"]) == (2, 2, 0)
    # one dataset, one chunker config: load, chunk and retrieve once; the budgets differ from assemble on
    assert t["stages_computed"] == {"load": 1, "chunk": 1, "retrieve": 1, "assemble": 2, "respond": 2, "evaluate": 2}
    docs, questions = 10, 20
    doc_tokens = 4200 * WORK["cl100k_per_word"]          # HiChunk Table 2: Qasper, 4.2k words per document
    q_tokens = 8.9 * WORK["cl100k_per_word"]             # and 8.9 words per question
    embedded = docs * doc_tokens / 1000 * 1000.0 + questions * q_tokens
    from harness import registry

    tpl = registry.compose(["responder=llm"]).responder.templates.qasper
    overhead = Tokenizer("tokens", "cl100k").count(tpl.prompt.replace("{context}", "").replace("{input}", ""))
    prefill = questions * (overhead + q_tokens + 100)
    decode = questions * tpl.max_tokens
    respond_s = prefill / PREFILL_RATE + decode / DECODE_RATE
    expected = (embedded / ENCODER_RATE + 2 * respond_s) / 3600   # retrieval once, each row's answers
    assert t["gpu_hours"] == pytest.approx(expected)
    assert r["total"]["gpu_hours"] == pytest.approx(expected)
    roles = {row["role"]: row for row in t["roles"]}
    assert roles["retriever.embedder"]["embedded"] == pytest.approx(embedded)
    assert roles["responder.llm"]["prefill"] == pytest.approx(2 * prefill)
    assert not t["missing"]
    # a point alone pays for everything it runs, shared or not
    alone = [p["gpu_hours_alone"] for p in t["points_detail"]]
    assert alone == pytest.approx([(embedded / ENCODER_RATE + respond_s) / 3600] * 2)


def test_a_missing_figure_is_unknown_not_zero(toy, tmp_path):
    hw = load_hardware(_hardware(tmp_path, encoders=[{"name": "small", "up_to_m": 100, "tokens_per_s": {
        "value": None, "source": "none found: run tables calibrate"}}]))
    plans, planner = plan_tables([toy], "full", [f"cache.dir={tmp_path / 'cache'}"], WORK)
    t = report(plans, planner, hw)["tables"][0]
    assert any("none found: run tables calibrate" in why for why in t["missing"])
    row = {row["role"]: row for row in t["roles"]}["retriever.embedder"]
    assert (row["no_figure"], row["work_unknown"], row["gpu_hours"]) == (1, 0, 0)
    assert row["embedded"] > 0   # the work is counted; only its hours are unknown


@pytest.mark.parametrize("change, key", [
    ({"llm": [{"name": "x", "up_to_b": 8, "prefill_tokens_per_s": {"value": -3, "source": "s"},
               "decode_tokens_per_s": {"value": 1, "source": "s"}}]}, "llm[0].prefill_tokens_per_s.value"),
    ({"llm": [{"name": "x", "up_to_b": 8, "prefill_tokens_per_s": {"value": 5},
               "decode_tokens_per_s": {"value": 1, "source": "s"}}]}, "llm[0].prefill_tokens_per_s"),
    ({"encoders": [{"name": "e", "tokens_per_s": {"value": 1, "source": "s"}}]}, "encoders[0]"),
    ({"gpus": 3}, "unknown keys ['gpus']"),
    ({"params": {"m": "big"}}, "params"),
    ({"memory_gb": 0}, "memory_gb"),
    ({"weight_bytes": {"m": "fp8"}}, "weight_bytes"),
])
def test_hardware_file_errors_name_the_file_and_key(tmp_path, change, key):
    path = _hardware(tmp_path, **change)
    with pytest.raises(ConfigError) as e:
        load_hardware(path)
    assert str(path) in str(e.value) and key in str(e.value) and "\n" not in str(e.value)


def test_hardware_file_not_found_names_the_known_ones():
    with pytest.raises(ConfigError, match="h100"):
        load_hardware("no-such-gpu")


def test_the_cited_file_has_a_source_for_every_figure():
    hw = load_hardware("h100")
    for c in hw.llm + hw.encoders:
        for what, f in c.figures.items():
            assert f.source.startswith("https://") if f.value is not None else "none found" in f.source, (c.name, what)


def test_size_class_and_measured_figures(tmp_path):
    path = _hardware(tmp_path)
    write_measured(path, "bundled", {"prefill_tokens_per_s": Figure(5.0, "measured on toy 2026-01-01"),
                                     "decode_tokens_per_s": Figure(1.0, "measured on toy 2026-01-01")})
    hw = load_hardware(path)
    assert hw.figure("llm", "bundled", "prefill_tokens_per_s")[0].value == 5.0
    assert hw.figure("llm", "Qwen/Qwen2.5-0.5B-Instruct", "decode_tokens_per_s")[0].value == DECODE_RATE
    assert hw.figure("llm", "Qwen/Qwen3-8B", "decode_tokens_per_s")[0].missing      # larger than every class
    assert hw.figure("llm", "someone/model", "decode_tokens_per_s")[0].missing      # size unknown


def test_calibrate_writes_the_encoder_probe_and_refuses_llm_without_vllm(tmp_path, monkeypatch):
    from harness.report.tables import calibrate

    monkeypatch.setattr(calibrate, "PASSAGES", 16)
    monkeypatch.setattr(calibrate, "passages", lambda n, words: ["a passage of plain words " * (words // 5)] * n)
    path = _hardware(tmp_path)
    lines = list(calibrate.calibrate(str(path), ["encoder:bundled"], seconds=0.01))
    assert len(lines) == 1 and lines[0].startswith("bundled: tokens_per_s")
    measured = load_hardware(path).measured["bundled"]["tokens_per_s"]
    assert measured.value > 0 and measured.source.startswith("measured on ")
    monkeypatch.setitem(sys.modules, "vllm", None)   # not installed
    with pytest.raises(ConfigError, match="vllm is not installed") as e:
        list(calibrate.calibrate(str(path), ["llm:Qwen/Qwen3-8B"], seconds=1))
    assert "\n" not in str(e.value)


def test_the_checked_in_method_work_covers_every_chunker():
    from harness import registry

    work = load_method_work()
    assert set(work["methods"]) == set(registry.choices("chunker"))
    assert not [m for m, e in work["methods"].items() if "error" in e]


@pytest.mark.slow
def test_smoke_plan_counts_the_runnable_smoke_grid(tmp_path):
    specs = tables.all_specs()
    runnable = sum(not p.skip for s in specs for p in s.runs("smoke"))
    plans, _ = plan_tables(specs, "smoke", [f"cache.dir={tmp_path}"], load_method_work())
    assert sum(len(tp.points) for tp in plans) == runnable


@pytest.mark.slow
def test_weights_that_do_not_fit_their_tensor_parallel_degree_are_flagged():
    """DeepSeek-R1-0528 as released (671B parameters in FP8) on 8 x 80 GB: 83.9 GB a GPU against
    the 72 GB vLLM may take; a quantized or smaller model, or a file without a GPU memory, says nothing."""
    hw = load_hardware("h100")
    why = hw.fit("deepseek-ai/DeepSeek-R1-0528", 8)
    assert why.startswith("does not fit: 671B parameters x 1 bytes = 671 GB of weights, 83.9 GB per GPU at TP 8 "
                          "> 72.0 GB (0.9 of 80 GB); the weights need at least 10 such GPUs")
    assert hw.fit("Qwen/Qwen3-32B", 1) is None                        # 64 GB in bf16
    assert hw.fit("Qwen/Qwen3-32B", 1, share=0.7).startswith("does not fit")
    assert hw.fit("meta-llama/Meta-Llama-3-70B-Instruct", 1, "awq") is None   # 35 GB in 4 bits
    assert hw.fit("someone/model", 1) is None                         # size unknown: no claim


def test_full_plan_of_every_table_runs_offline(tmp_path):
    out = subprocess.run([sys.executable, "-m", "harness.cli", "tables", "plan", "--tables", "all", "--scale", "full",
                          "--json", "--set", f"cache.dir={tmp_path}"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    r = json.loads(out.stdout)
    specs = tables.all_specs()
    assert [t["table"] for t in r["tables"]] == [s.id for s in specs]
    assert r["total"]["points"] == sum(not p.skip for s in specs for p in s.runs("full"))
    assert r["total"]["gpu_hours"] > 0 and r["hardware"]["figures"]
    unfit = {(row["model"], row["tensor_parallel"]) for row in r["total"]["roles"] if row["fit"]}
    assert unfit == {("deepseek-ai/DeepSeek-R1-0528", 8)}   # the one full-scale role that cannot load on 8 x H100
    for t in r["tables"]:
        assert t["jobs"] == t["points"] and sum(t["jobs_by_gpus"].values()) == t["jobs"]
        assert all(p["documents"] is None or p["documents"] > 0 for p in t["points_detail"])


@pytest.mark.slow
def test_smoke_cpu_seconds_are_read_under_the_runners_own_keys(tmp_path):
    """A real run fills the cache; the plan finds its chunking seconds there (same stage keys)."""
    from harness.pipeline.runner import Pipeline
    from harness import registry
    from harness.report.tables.plan_render import cached_chunk_seconds

    (tmp_path / "t").mkdir()
    path = tmp_path / "t" / "smoke.yaml"
    path.write_text(TOY.replace("dataset=qasper", "dataset=ohrbench, dataset.limit_docs=1")
                    .replace("responder=llm, responder.max_context_tokens=100", "responder=none"), encoding="utf-8")
    toy = tables.load_spec(path, tmp_path)
    extra = [f"cache.dir={tmp_path / 'cache'}", "tracking=none"]
    plans, planner = plan_tables([toy], "smoke", extra, WORK)
    assert cached_chunk_seconds(plans, planner)["total"] == {"stages": 1, "found": 0, "seconds": 0}
    point = toy.runs("smoke")[0]
    Pipeline(registry.compose([*point.overrides, "scale=smoke", *extra]), log=lambda *_: None).run()
    found = cached_chunk_seconds(plans, planner)
    assert found["total"]["found"] == 1 and found["total"]["seconds"] > 0
    assert plans[0].points[0].size.documents == 1


def test_a_swept_point_has_the_slices_of_its_own_composition(tmp_path):
    """The shortcut (a base composed once, sweep and x values set into its slices) is exact."""
    from harness.report.tables.plan import Planner, composition

    extra = [f"cache.dir={tmp_path}"]
    planner = Planner("full", extra, WORK)
    for table in ("qu_et_al/table1", "hichunk/figureA1", "lgmgc/table2"):
        spec = tables.select(table)[0]
        swept = [p for p in spec.runs("full") if not p.skip and len(p.key.split("|")) > 2]
        for p in swept[:: max(1, len(swept) // 3)][:3]:
            assert planner.point(spec, p).slices == composition(tuple(p.overrides), "full", tuple(extra)).slices, p.key
