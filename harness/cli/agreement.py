"""``chunkbench agreement --out DIR dataset=X``: how far a synthetic set (``chunkbench synth`` on the
dataset's own documents) ranks chunkers as the dataset's own questions do (harness.synth.agreement)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.cli.common import verb
from harness.cli.synth import overrides  # the same: +synth=default, then what was given
from harness.types import ConfigError

# the overrides that set up the question writer, not the runs
SYNTH_KEYS = ("synth.", "+synth", "roles.synth.", "llm@roles.synth.", "embedder@roles.synth.")


def add(sub) -> None:
    p = verb(sub, "agreement", "how far a synthetic set ranks chunkers as a labelled dataset's questions do",
             "chunkbench agreement --out chroma-check dataset=chroma 'dataset.corpora=[state_of_the_union]' "
             "retriever=bm25 llm@roles.synth.llm=openai roles.synth.llm.model=Qwen/Qwen3-8B synth.questions=50",
             description="Writes a synthetic set for the dataset's documents (DIR/synthetic, as chunkbench synth "
                         "does), runs each chunker on it and on the dataset's own questions, and reports Kendall's "
                         "tau between the two rankings with a bootstrap interval, and each chunker's difference "
                         "(DIR/agreement.json).")
    p.add_argument("--out", required=True, help="the new folder to write (it must not exist)")
    p.add_argument("--chunkers", default="fixed,sentence,recursive", help="chunker configs, comma-separated")
    p.add_argument("--metric", default="evidence_recall", help="the per-question metric that ranks them")
    p.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples of the questions")
    p.add_argument("given", nargs="*", metavar="OVERRIDE",
                   help="dataset=... (a labelled dataset), run overrides (retriever=bm25, ...), synth.<key>=..., "
                        "the question writer (llm@roles.synth.llm=...)")
    p.set_defaults(run=run, overrides=overrides, more_positionals="given")


def run(args: argparse.Namespace, cfg) -> None:
    from harness.api import evaluate
    from harness.cli.synth import summary
    from harness.pipeline.components import build_component
    from harness.synth.agreement import agreement
    from harness.synth.output import check_destination, manifest, whole_folder, write_set
    from harness.types import DataError, ServiceError

    import numpy as np

    from harness import registry

    out = Path(args.out)
    check_destination(out)
    chunkers = [c for c in args.chunkers.split(",") if c]
    # what can be checked is checked before the question writer runs (minutes a question on a CPU)
    if unknown := [c for c in chunkers if c not in registry.choices("chunker")]:
        raise ConfigError(f"--chunkers: no chunker {', '.join(unknown)} (chunkbench ls chunker)")
    if len(chunkers) < 2:
        raise ConfigError(f"--chunkers: at least two to rank, got {args.chunkers!r}")
    if args.resamples < 1:
        raise ConfigError(f"--resamples: a number of bootstrap resamples >= 1, got {args.resamples}")
    for_runs = [o for o in args.given if not o.startswith(SYNTH_KEYS)]
    not_data = [o for o in for_runs if not o.lstrip("+~").startswith("dataset")]

    def per_question(extra: list[str], chunker: str) -> list[float]:
        rows = evaluate([*extra, f"chunker={chunker}"], record=False).per_query
        if rows and args.metric not in rows[0]:
            raise ConfigError(f"--metric {args.metric}: not a per-question metric of these runs (they "
                              f"have {', '.join(k for k, v in rows[0].items() if isinstance(v, float))})")
        return [float(r[args.metric]) for r in rows]

    scores: dict[str, list[list[float]]] = {"own": [per_question(for_runs, c) for c in chunkers], "synthetic": []}
    try:
        dataset = build_component(cfg.dataset, "dataset").load()
        synth = build_component(cfg.synth, "synth")
        result = synth.run(dataset.documents)
    except (DataError, ServiceError) as e:
        raise ConfigError(str(e)) from e
    with whole_folder(out) as scratch:  # DIR appears when every run is done, or not at all
        synthetic = write_set(scratch / "synthetic", dataset.documents, result.queries,
                              manifest(synth, dataset.documents, result, Path(f"dataset={dataset.name}")))
        print(summary(result, out / "synthetic"))
        if not result.queries:
            print("no synthetic question to rank the chunkers on: no agreement to report")
            return
        on_synthetic = [*not_data, "dataset=local", f"dataset.path={synthetic}"]
        scores["synthetic"] = [per_question(on_synthetic, c) for c in chunkers]
        found = agreement(chunkers, np.array(scores["own"]), np.array(scores["synthetic"]), args.resamples)
        record = {"dataset": dataset.name, "metric": args.metric,
                  "llm": {"backend": type(synth.llm).__name__, **synth.llm.identity}, **found.__dict__}
        (scratch / "agreement.json").write_text(json.dumps(record, indent=2) + "\n")
    print(found.report(args.metric))
