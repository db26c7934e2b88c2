"""Every script under scripts/ answers ``--help`` before it loads the harness's heavy parts."""

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO

SCRIPTS = sorted((REPO / "scripts").glob("*.py"))
HEAVY = ("torch", "mlflow", "pandas", "transformers", "sentence_transformers", "harness.pipeline",
         "harness.data", "harness.llm")

# Runs the script as `python SCRIPT --help` would, then reports what it had imported.
PROBE = """
import json, runpy, sys
sys.argv = [sys.argv[1], "--help"]
code = None
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as e:
    code = e.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def test_every_script_is_probed():
    assert {p.name for p in SCRIPTS} >= {"bench_warm_cold.py", "bench_chunkers.py", "bench_llm.py"}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_help_answers_before_heavy_imports(script):
    out = subprocess.run([sys.executable, "-c", PROBE, str(script)], cwd=REPO, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    usage, report = out.stdout, json.loads(out.stdout.splitlines()[-1])
    assert report["code"] == 0 and "usage:" in usage  # argparse printed the help and exited
    loaded = [m for m in report["modules"] if m in HEAVY or m.startswith(tuple(h + "." for h in HEAVY))]
    assert not loaded, f"{script.name} --help imported {loaded[:5]}"
