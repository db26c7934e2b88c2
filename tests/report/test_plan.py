"""`tables plan` and `tables calibrate`: the arithmetic on a toy table (points, shared stages once,
GPU-hours = tokens / (tokens/s) / 3600 per role), the hardware file's errors, the smoke grid's
point count, a full-scale plan of every table offline, and calibrate's file writing. Where the
sizes come from: tests/report/test_plan_sizes.py."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from harness.report.tables import spec as tables
from harness.report.tables.hardware import Figure, load_hardware, write_measured
from harness.report.tables.model_facts import ModelFacts
from harness.report.tables.measure import load_method_work
from harness.report.tables.plan import plan_tables
from harness.report.tables.plan_cost import Totals, report
from harness.report.tables.prices import load_prices
from harness.report.tables.throughput import decode_rate, prefill_rate
from harness.report.tables.workload import RoleWork
from harness.text import Tokenizer
from harness.types import ConfigError

# Toy constants, chosen so every derived rate is a round number (harness/report/tables/throughput.py):
#   encoder (fp32): 0.5 TFLOP/s x 0.5 / (2 x 0.1B)                     = 1,250 tok/s
#   prefill (bf16): 1 TFLOP/s x 0.5 / (2 x 0.1B)                       = 2,500 tok/s
#   decode, batch 10: step = max(0.1B x 2 bytes / (50 GB/s x 0.5) = 8 ms, 2 x 0.1B x 10 / (1 TFLOP/s x 0.5) = 4 ms)
#                     = 8 ms, so 10 / 8 ms                             = 1,250 tok/s
ENCODER_RATE, PREFILL_RATE, DECODE_RATE = 1250.0, 2500.0, 1250.0
TOY_MODELS = {"bundled": ModelFacts(0.1, 0.1, "bf16", "toy card")}


def _const(value):
    return {"value": value, "source": "toy datasheet", "date": "2026-01-01"}


def _hardware(tmp_path, **changes):
    raw = {
        "gpu": "toy GPU",
        "assumptions": ["toy figures"],
        "constants": {"peak_tflops_bf16": _const(1.0), "peak_tflops_fp8": _const(2.0), "peak_tflops_fp32": _const(0.5),
                      "memory_bandwidth_gbs": _const(50.0), "compute_utilisation": _const(0.5),
                      "memory_utilisation": _const(0.5), "engine_batch": _const(10)},
        "encoder_dtype": "fp32",
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
    hw = load_hardware(_hardware(tmp_path), TOY_MODELS)
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
    assert t["basis_hours"] == pytest.approx({"derived": expected}) and t["usd"] == 0
    # wall-clock: one job holds the retrieval and its answers, the other its answers; 16 at once
    longest = (embedded / ENCODER_RATE + respond_s) / 3600
    assert t["wall"] == pytest.approx({"hours": longest, "longest_job_hours": longest, "spread_hours": expected / 16,
                                       "parallelism": 16, "over_limit": 0, "limit_hours": 4.0})
    roles = {row["role"]: row for row in t["roles"]}
    assert roles["retriever.embedder"]["embedded"] == pytest.approx(embedded)
    assert roles["responder.llm"]["prefill"] == pytest.approx(2 * prefill)
    assert not t["missing"]
    # a point alone pays for everything it runs, shared or not
    alone = [p["gpu_hours_alone"] for p in t["points_detail"]]
    assert alone == pytest.approx([(embedded / ENCODER_RATE + respond_s) / 3600] * 2)


def test_hand_computed_derivations():
    assert prefill_rate(1.0, 0.5, 0.1)[0] == pytest.approx(2500)
    rate, how = decode_rate(1.0, 0.5, 50.0, 0.5, 0.1, 0.1, 2.0, 10, 1)
    assert rate == pytest.approx(1250) and "[weights read]" in how
    # compute-bound at a large batch: 2 x 0.1B x 1000 / 0.5 TFLOP/s = 0.4 s a step, 1000 tokens each
    assert decode_rate(1.0, 0.5, 50.0, 0.5, 0.1, 0.1, 2.0, 1000, 1)[0] == pytest.approx(2500)
    # a mixture of experts: all 10B weights read on 2 GPUs (5 GB each at 25 GB/s: 0.2 s), 1B active computed
    assert decode_rate(1.0, 0.5, 50.0, 0.5, 10, 1, 1.0, 10, 2)[0] == pytest.approx(10 / 0.2 / 2)


def test_a_model_without_a_parameter_count_is_unknown_not_zero(toy, tmp_path):
    hw = load_hardware(_hardware(tmp_path), {})
    plans, planner = plan_tables([toy], "full", [f"cache.dir={tmp_path / 'cache'}"], WORK)
    t = report(plans, planner, hw)["tables"][0]
    assert any("no parameter count for bundled" in why for why in t["missing"])
    row = {row["role"]: row for row in t["roles"]}["retriever.embedder"]
    assert (row["no_figure"], row["work_unknown"], row["gpu_hours"]) == (1, 0, 0)
    assert row["embedded"] > 0   # the work is counted; only its hours are unknown


def test_measured_then_cited_then_derived(tmp_path):
    path = _hardware(tmp_path, cited={"bundled": {"decode_tokens_per_s": {"value": 7.0, "source": "a paper",
                                                                          "date": "2026-01-01"}}})
    hw = load_hardware(path, TOY_MODELS)
    assert (hw.figure("llm", "bundled", "decode_tokens_per_s").value, hw.figure("llm", "bundled", "decode_tokens_per_s").basis) == (7.0, "cited")
    f = hw.figure("llm", "bundled", "prefill_tokens_per_s")
    assert (f.value, f.basis) == (PREFILL_RATE, "derived") and "2 x 0.1B" in f.note
    assert hw.figure("encoder", "bundled", "tokens_per_s").value == ENCODER_RATE
    write_measured(path, "bundled", {"decode_tokens_per_s": Figure(5.0, "measured on toy 2026-01-01")})
    hw = load_hardware(path, TOY_MODELS)
    assert (hw.figure("llm", "bundled", "decode_tokens_per_s").value, hw.figure("llm", "bundled", "decode_tokens_per_s").basis) == (5.0, "measured")
    assert hw.figure("llm", "someone/model", "decode_tokens_per_s").missing      # no parameter count


def test_an_api_role_is_priced_from_the_dated_list(tmp_path):
    """gpt-4 at the list's $30 / $60 per million: 1M prompt and 0.5M completion tokens = $60."""
    price = load_prices()["gpt-4"]
    assert (price.input, price.output) == (30.0, 60.0) and price.date and price.source.startswith("https://")
    t = Totals()
    t.add(RoleWork("responder.llm", "gpt-4", "llm", "OpenAILLM", prefill=1e6, decode=5e5, calls=10),
          load_hardware(_hardware(tmp_path), TOY_MODELS), load_prices())
    assert (t.usd, t.gpu_s, t.missing) == (pytest.approx(60.0), 0.0, {})
    t.add(RoleWork("responder.llm", "gpt-9", "llm", "OpenAILLM", prefill=1e6), load_hardware(_hardware(tmp_path), TOY_MODELS),
          load_prices())
    assert t.missing == {"gpt-9: no price in configs/prices/": 1}


@pytest.mark.parametrize("change, key", [
    ({"constants": {"peak_tflops_bf16": _const(1.0)}}, "constants: missing peak_tflops_fp8"),
    ({"cited": {"m": {"decode_tokens_per_s": {"value": -3, "source": "s"}}}}, "cited.m.decode_tokens_per_s.value"),
    ({"cited": {"m": {"decode_tokens_per_s": {"value": 5}}}}, "cited.m.decode_tokens_per_s"),
    ({"checks": [{"model": "x", "what": "decode_tokens_per_s"}]}, "checks[0]"),
    ({"gpus": 3}, "unknown keys ['gpus']"),
    ({"memory_gb": 0}, "memory_gb"),
    ({"encoder_dtype": "int3"}, "encoder_dtype"),
])
def test_hardware_file_errors_name_the_file_and_key(tmp_path, change, key):
    path = _hardware(tmp_path, **change)
    with pytest.raises(ConfigError) as e:
        load_hardware(path)
    assert str(path) in str(e.value) and key in str(e.value) and "\n" not in str(e.value)


def test_hardware_file_not_found_names_the_known_ones():
    with pytest.raises(ConfigError, match="h100"):
        load_hardware("no-such-gpu")


def test_the_cited_files_have_a_source_and_date_for_every_constant_count_and_price():
    hw = load_hardware("h100")
    for name, f in hw.constants.items():
        assert f.source and f.note and "20" in f.source, name   # a source, what it prints, its date
    assert all(c["source"] and c["date"] for c in hw.checks) and len(hw.checks) >= 4
    for model, facts in hw.models.items():
        assert facts.source.startswith("https://") and facts.figure, model
    for model, price in load_prices().items():
        assert price.source.startswith("https://") and price.date, model


def test_model_facts_errors_name_the_file_and_key():
    from harness.report.tables.model_facts import parse_models

    for node, key in (({"m": {"params_b": 1}}, "models.m"), ({"m": {"params_b": 1, "source": "s", "dtype": "fp7"}}, "models.m.dtype"),
                      ({"m": {"params_b": 1, "active_b": 2, "source": "s"}}, "models.m.active_b")):
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")) as e:
            parse_models(node, "f.yaml: models")
        assert "\n" not in str(e.value)


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
    assert r["total"]["gpu_hours"] > 0 and r["hardware"]["constants"] and r["hardware"]["checks"]
    # every model role the full tables run has a throughput, every API role a price
    # and every data size is the paper's, its publisher's, counted or a declared assumption (tests/report/test_plan_sizes.py)
    assert not r["total"]["missing"]
    assert set(r["total"]["basis_hours"]) == {"derived"} and r["total"]["usd"] > 0
    assert r["total"]["wall"]["hours"] >= r["total"]["wall"]["longest_job_hours"] > 0
    unfit = {(row["model"], row["tensor_parallel"]) for row in r["total"]["roles"] if row["fit"]}
    assert unfit == {("deepseek-ai/DeepSeek-R1-0528", 8)}   # the one full-scale role that cannot load on 8 x H100
    for t in r["tables"]:
        assert t["jobs"] == t["points"] and sum(t["jobs_by_gpus"].values()) == t["jobs"]
        assert all(p["documents"] and p["questions"] is not None for p in t["points_detail"])   # every size known


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


def test_a_cold_smoke_plan_estimates_cpu_from_the_committed_index(tmp_path):
    """No cached timing (an empty cache): the table's seconds come from results/index.json."""
    from harness.report.tables.index import load
    from harness.report.tables.render import RESULTS

    row = load(RESULTS, "smoke")["lgmgc/table1"]
    out = subprocess.run([sys.executable, "-m", "harness.cli", "tables", "plan", "--tables", "lgmgc/table1",
                          "--scale", "smoke", "--set", f"cache.dir={tmp_path}"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = [ln.strip() for ln in out.stdout.splitlines() if ln.strip().startswith("CPU:")]
    assert len(lines) == 2   # the table's and the total's
    assert all(f"estimate from results/index.json (commit {row.commit}, {row.date}" in ln
               and f"{row.computed:,.0f} s computed by its smoke runs" in ln for ln in lines)
    assert "no cached timing" in lines[0]


def _plan_cli(*args):
    out = subprocess.run([sys.executable, "-m", "harness.cli", "tables", "plan", *args], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_plan_lines_say_what_each_figure_rests_on(tmp_path):
    """Through the CLI: a table whose sizes are all known prints GPU-hours with no unknown term,
    by basis, API dollars and the wall-clock; a measured figure in a copy of the hardware file
    replaces the derived one on its role's lines, at tokens / (tokens/s) / 3600."""
    import shutil

    hw = tmp_path / "h100.yaml"
    shutil.copy(load_hardware("h100").path, hw)
    write_measured(hw, "intfloat/e5-large", {"tokens_per_s": Figure(1000.0, "measured on toy 2026-01-01")})
    args = ["--tables", "lgmgc/table2", "--scale", "full", "--hardware", str(hw), "--set", f"cache.dir={tmp_path}"]
    text = _plan_cli(*args)
    total = text.split("\nTOTAL: ")[1].split("\n\n")[0].splitlines()
    assert "unknown" not in total[1] and "(derived " in total[1] and "measured " in total[1]
    assert "API $0" in total[1] and "wall-clock >= " in total[1] and "at 16 jobs at once" in total[1]
    roles = total[2:]
    assert roles and all(ln.rstrip().endswith(("[derived]", "[measured]")) for ln in roles)
    assert all(ln.rstrip().endswith("[measured]") for ln in roles if "intfloat/e5-large" in ln)
    r = json.loads(_plan_cli(*args, "--json"))
    for row in r["total"]["roles"]:
        if row["model"] == "intfloat/e5-large":
            assert row["gpu_hours"] == pytest.approx(row["embedded"] / 1000.0 / 3600)
