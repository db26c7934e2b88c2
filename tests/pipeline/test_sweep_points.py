"""A sweep checks every point before its first job (issue 51, item 9), as ``tables run`` checks a
table's grid: ``-m chunker.size=50,0,100`` used to record 50, fail on 0 and never run 100."""

import pytest

from harness.pipeline.sweep import check_sweep_points, label, sweep_points
from harness.types import ConfigError
from tests.conftest import TINY_LEXICAL
from tests.user_folder import chunkbench_run, recorded, user_folder


@pytest.mark.slow
def test_a_bad_point_stops_the_sweep_before_its_first_job(tmp_path):
    folder = user_folder(tmp_path)
    out = chunkbench_run(folder, "chunker.size=50,0,100", sweep=True)
    assert out.returncode == 2, out.stderr[-3000:]
    lines = out.stderr.strip().splitlines()
    assert lines[-1] == ("chunkbench: error: sweep point 2 of 3 (chunker.size=0): chunker: chunker.size must be an "
                         "integer >= 1 (got size=0); no job was run"), out.stderr[-3000:]
    assert "Traceback" not in out.stderr and "[load]" not in out.stdout
    assert recorded(folder) == [] and not (folder / "cache").exists()


def test_every_bad_point_is_counted_and_a_good_sweep_passes(tmp_path):
    folder = user_folder(tmp_path)
    common = ["dataset=local", f"dataset.path={folder}", "retriever=bm25", "tracking=none"]
    with pytest.raises(ConfigError, match=r"^sweep point 1 of 4 \(chunker=fixed chunker.size=0\): .* "
                                          r"\(and 1 more point\); no job was run$"):
        check_sweep_points([*common, "chunker=fixed,sentence", "chunker.size=0,50"])
    with pytest.raises(ConfigError, match=rf"^sweep point 2 of 2 \(dataset.path={tmp_path}/nowhere\): "):
        check_sweep_points([*common[:1], f"dataset.path={folder},{tmp_path}/nowhere", *common[2:]])
    check_sweep_points([*common, "chunker=fixed,sentence", "chunker.size=range(40,61,20)"])
    check_sweep_points([*TINY_LEXICAL, "tracking=none", "retriever.k1=1.2,1.5"])
    with pytest.raises(ConfigError, match=r"sweep point 1 of 2 \(retriever.k1=1.2\): objective=nope: "):
        check_sweep_points([*TINY_LEXICAL, "tracking=none", "objective=nope", "retriever.k1=1.2,1.5"])


def test_a_point_is_named_by_its_swept_values_with_keys_masked():
    jobs, swept = sweep_points(["tracking=none", "llm.api_key=sk-first-key,sk-other-key", "chunker.size=50"])
    assert [label(job, swept) for job in jobs] == ["llm.api_key=***", "llm.api_key=***"]
    assert len(jobs) == 2 and all("chunker.size=50" in job for job in jobs)
