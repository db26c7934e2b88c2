"""Wall time of a cold run (empty cache) and a warm rerun of the same command, and their ratio.

    .venv/bin/python scripts/bench_warm_cold.py [hydra overrides...]

Runs `python -m harness` as a user would (fresh process each time, MLflow recording on, in a
temporary cache and store), so process start, imports and MLflow logging are included.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed_run(overrides: list[str]) -> float:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "harness", *overrides], cwd=REPO, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        overrides = [f"cache.dir={tmp}/cache", f"tracking.uri=sqlite:///{tmp}/mlruns.db",
                     f"hydra.run.dir={tmp}/outputs", *sys.argv[1:]]
        cold = timed_run(overrides)
        warm = timed_run(overrides)
    print(f"overrides: {' '.join(sys.argv[1:]) or '(defaults)'}")
    print(f"cold run: {cold:.1f} s   warm run: {warm:.1f} s   warm/cold: {warm / cold:.1%}")


if __name__ == "__main__":
    main()
