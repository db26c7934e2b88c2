"""Wall time of a cold run (empty cache) and a warm rerun of the same command, and their ratio.

    .venv/bin/python scripts/bench_warm_cold.py [hydra overrides...]

Runs `python -m harness` as a user would (fresh process each time, MLflow recording on, in a
temporary cache and store), so process start, imports and MLflow logging are included.
"""

from __future__ import annotations

import argparse
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
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("overrides", nargs="*", help="Hydra overrides of `python -m harness`, e.g. chunker=sentence")
    given = ap.parse_args().overrides
    with tempfile.TemporaryDirectory() as tmp:
        overrides = [f"cache.dir={tmp}/cache", f"tracking.uri=sqlite:///{tmp}/mlruns.db",
                     f"hydra.run.dir={tmp}/outputs", *given]
        cold = timed_run(overrides)
        warm = timed_run(overrides)
    print(f"overrides: {' '.join(given) or '(defaults)'}")
    print(f"cold run: {cold:.1f} s   warm run: {warm:.1f} s   warm/cold: {warm / cold:.1%}")


if __name__ == "__main__":
    main()
