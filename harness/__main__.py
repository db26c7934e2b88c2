"""``python -m harness [overrides]``: one benchmark run (or a sweep with ``-m``)."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import hydra  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from harness.types import ConfigError, DataError  # noqa: E402


@hydra.main(version_base="1.3", config_path="../configs", config_name="config")
def main(cfg: DictConfig) -> float | None:
    from harness.pipeline.record import log_run
    from harness.pipeline.runner import Pipeline
    from harness.report.summary import print_summary

    try:
        pipeline = Pipeline(cfg)  # builds and validates every component before any work
        result = pipeline.run()
    except (ConfigError, DataError) as e:
        print(f"chunkbench: error: {e}", file=sys.stderr)
        sys.exit(2)
    choices = hydra.core.hydra_config.HydraConfig.get().runtime.choices
    name = "/".join(str(choices.get(g)) for g in ("dataset", "chunker", "retriever", "context"))
    title = f"{name} [scale={cfg.scale}]"
    if cfg.tracking.enabled:
        run_id = log_run(cfg, result, name)
        title += f" mlflow run {run_id[:8]}"
    print_summary(result, title)
    return result.metrics.get(cfg.objective)


if __name__ == "__main__":
    main()
