"""``python -m harness [overrides]``: one benchmark run (or a sweep with ``-m``)."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import hydra  # noqa: E402
from hydra.core.hydra_config import HydraConfig  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from harness.types import ConfigError, DataError  # noqa: E402


@hydra.main(version_base="1.3", config_path="../configs", config_name="config")
def main(cfg: DictConfig) -> float | None:
    from harness.pipeline.preflight import check_job, check_objective
    from harness.pipeline.record import log_run
    from harness.pipeline.runner import Pipeline
    from harness.report.summary import print_summary

    hydra_cfg = HydraConfig.get()
    try:
        check_job(cfg, hydra_cfg.launcher)
        pipeline = Pipeline(cfg)  # builds and validates every component before any work
        check_objective(cfg.objective, pipeline.c.metrics, hydra_cfg.overrides.task)
        result = pipeline.run()
    except (ConfigError, DataError) as e:
        print(f"chunkbench: error: {e}", file=sys.stderr)
        sys.exit(2)
    choices = hydra_cfg.runtime.choices
    name = "/".join(str(choices.get(g)) for g in ("dataset", "chunker", "retriever", "context"))
    title = f"{name} [scale={cfg.scale}]"
    if cfg.tracking.enabled:
        try:
            run_id = log_run(cfg, result, name)
        except Exception as e:  # the server's client has given up its retries (MLFLOW_HTTP_REQUEST_*)
            print(f"chunkbench: error: the run is computed and cached, but recording it in {cfg.tracking.uri} "
                  f"failed ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); "
                  f"rerun the same command to record it from the cache", file=sys.stderr)
            sys.exit(3)
        title += f" mlflow run {run_id[:8]}"
    print_summary(result, title)
    return result.metrics.get(cfg.objective)


if __name__ == "__main__":
    main()
