"""A challenge through `--set profile=cluster` on the real SLURM cluster: the table's baseline
points and the challenger's one job array (each job rebuilds the challenged table from the
challenge's JSON), the report written from the tracking server with nothing run on the submitting
machine, and the same challenge again queueing nothing.

MC-indexing Table 6 (chunking error, BM25 on the bundled OHR-Bench paper): seconds a point. After
test_slurm_tables.py, its baselines are in the tracking server already: the challenge reads them.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TABLE = "mc_indexing/table6"
BASELINES = 7  # the table's points at smoke scale


def challenge(sweep_dir: Path, out: Path, env: dict, launcher: list[str]) -> str:
    sets = [a for o in ["profile=cluster", *launcher, f"hydra.sweep.dir={sweep_dir}"] for a in ("--set", o)]
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "challenge", "sentence", "chunker.size=60",
                           "--tables", TABLE, "--out", str(out), *sets],
                          cwd=REPO, capture_output=True, text=True, env={**os.environ, **env})
    assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_a_challenge_runs_as_one_slurm_array_and_reports(slurm, mlflow_server, launcher, sacct, tmp_path):
    shared = tmp_path / "shared"
    env = {"CHUNKBENCH_SHARED": str(shared), "MLFLOW_TRACKING_URI": mlflow_server}
    out = challenge(shared / "first", tmp_path / "report", env, launcher)
    queued = re.search(r"challenge sentence: (\d+) baseline point\(s\) and (\d+) of the challenger's to queue", out)
    assert queued, out[-3000:]
    base, mine = map(int, queued.groups())
    assert mine > 0
    states = sacct(shared / "first")
    assert len(states) == base + mine and set(states.values()) == {"COMPLETED"}, states
    assert len({job.split("_")[0] for job in states}) == 1  # one array
    # the array ran what the record lacked; the submitting process ran nothing and read the rest
    done = re.search(rf"\[{TABLE}\] challenged: {mine} finished, 0 failed, (\d+) baseline points read from the "
                     rf"record, {base} run", out)
    assert done and int(done.group(1)) + base == BASELINES, out[-3000:]
    version = next((tmp_path / "report" / "sentence").glob("smoke-*"))  # <name>/<version>/
    assert "| ★ sentence" in (version / "tables" / f"{TABLE}.md").read_text()

    again = challenge(shared / "second", tmp_path / "report", env, launcher)
    assert "challenge sentence: 0 baseline point(s) and 0 of the challenger's to queue" in again
    assert "nothing to queue" in again and not (shared / "second" / ".submitit").exists()
