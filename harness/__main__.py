"""``python -m harness [overrides]``: one benchmark run (or a sweep with ``-m``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import hydra  # noqa: E402
from hydra.core.hydra_config import HydraConfig  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from harness.types import ConfigError, DataError, ServiceError  # noqa: E402


# An absolute path: Hydra reads a relative one against the calling module, which `chunkbench run`
# (harness.cli.run) is not.
@hydra.main(version_base="1.3", config_path=str(Path(__file__).resolve().parents[1] / "configs"), config_name="config")
def main(cfg: DictConfig) -> float | dict | None:
    from omegaconf import OmegaConf

    from harness.quiet import offline_when_local, quiet_logs, quiet_progress

    # before the pipeline imports huggingface_hub, transformers, jieba, mlflow
    quiet_logs()
    quiet_progress()
    try:
        resolved = OmegaConf.to_container(cfg, resolve=True)
    except Exception:  # a bad interpolation: reported below, by the first stage that reads it
        resolved = OmegaConf.to_container(cfg)
    offline_when_local({k: v for k, v in resolved.items() if k != "hydra"})

    from harness.chunking.contract import ChunkContractError
    from harness.pipeline.preflight import check_job, check_objective
    from harness.pipeline.record import check_store_options, record_run
    from harness.pipeline.runner import Pipeline
    from harness.pipeline.store import StoreError, open_store
    from harness.report.summary import print_summary

    hydra_cfg = HydraConfig.get()
    try:
        if hydra_cfg.job.chdir:  # then every relative path would be read inside outputs/<time>/
            raise ConfigError("hydra.job.chdir=true: ChunkBench reads dataset.path, cache.dir and tracking.uri "
                              "from the folder it is started in, and writes its outputs there without it; drop it")
        check_job(cfg, hydra_cfg.launcher)
        if line := tracking_env_note(cfg):
            print(f"chunkbench: note: {line}", file=sys.stderr)
        if cfg.tracking.enabled:  # a bad option or an unusable store stops the run before any work
            check_store_options(cfg)
            open_store(cfg.tracking.uri, create=False)
        if cfg.get("table_point") is not None:  # a job of a paper table's grid (hydra/sweeper=table)
            if cfg.table_point.get("challenge"):  # ... or of a challenge of it
                from harness.report.challenge.cluster import run_job
            else:
                from harness.report.tables.submit import run_job

            return run_job(cfg)
        pipeline = Pipeline(cfg)  # builds and validates every component before any work
        check_objective(cfg.objective, pipeline.c.metrics, hydra_cfg.overrides.task)
        result = pipeline.run()
    # ServiceError: a model server failed; ChunkContractError: what the chunker returned is broken (a
    # chunker that raised keeps its traceback: its author needs it)
    except (ConfigError, DataError, ServiceError, ChunkContractError) as e:
        print(f"chunkbench: error: {e}", file=sys.stderr)
        sys.exit(2)
    from harness.pipeline.naming import run_name

    name = run_name(hydra_cfg.runtime.choices, hydra_cfg.overrides.task)
    title = f"{name} [scale={cfg.scale}]"
    code = f" [code: {Path(__file__).resolve().parents[1]}]"  # the checkout an installed chunkbench imports
    if cfg.tracking.enabled:
        try:
            run_id, new = record_run(cfg, result, name)
        except StoreError as e:
            print(f"chunkbench: error: the run is computed and cached, but recording it in {cfg.tracking.uri} "
                  f"failed: {e}; then rerun the same command to record it from the cache", file=sys.stderr)
            sys.exit(3)
        except Exception as e:  # the server's client has given up its retries (MLFLOW_HTTP_REQUEST_*)
            print(f"chunkbench: error: the run is computed and cached, but recording it in {cfg.tracking.uri} "
                  f"failed ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}); "
                  f"rerun the same command to record it from the cache", file=sys.stderr)
            sys.exit(3)
        # tracking.rerun=skip: an identical run (same config and code) already recorded is not logged again
        title += f" mlflow run {run_id[:8]}" if new else f" already recorded as mlflow run {run_id[:8]}"
    print_summary(result, title + code)
    return result.metrics.get(cfg.objective)


def tracking_env_note(cfg: DictConfig) -> str | None:
    """``MLFLOW_TRACKING_URI`` is the cluster profile's input (README, docs/cluster.md: exported for
    ``profile=cluster``), not the default store: a run that records elsewhere says so once."""
    from harness.secrets import mask_text

    env = os.environ.get("MLFLOW_TRACKING_URI", "").strip()
    if not env or not cfg.tracking.enabled or str(cfg.tracking.uri) == env:
        return None
    return (f"MLFLOW_TRACKING_URI={mask_text(env, ())} is set, but this run records in "
            f"tracking.uri={mask_text(str(cfg.tracking.uri), ())}: profile=cluster reads the variable "
            f"(or give 'tracking.uri=${{oc.env:MLFLOW_TRACKING_URI}}')")


INTERRUPTED = "chunkbench: interrupted; rerun the same command to resume (what finished is cached)"


# Hydra's flags that take a value, and those that compose another config (then Hydra checks it all)
VALUED = {"--cfg", "-c", "--package", "-p", "--info", "-i", "--experimental-rerun"}
OTHER_CONFIG = {"--config-path", "-cp", "--config-name", "-cn", "--config-dir", "-cd"}


def overrides(argv: Sequence[str]) -> list[str]:
    """The overrides of a Hydra command line: its flags and their values left out."""
    out, after_flag = [], False
    for a in argv:
        if a.startswith("-"):
            after_flag = a in VALUED
        elif after_flag and "=" not in a:
            after_flag = False
        else:
            out.append(a)
            after_flag = False
    return out


def check_output_dirs(given: Sequence[str], sweep: bool = False) -> None:
    """The folder Hydra saves the run's config in must be one that can be made and written: Hydra
    makes it and writes there before the task runs, and reports its own traceback (then exits,
    so it cannot be caught around ``main()``). That is ``hydra.run.dir``/``hydra.sweep.dir`` as
    given on the command line (the part before any ``${...}``, ``${now:...}``), else the default's
    ``outputs/`` (``multirun/`` for a ``sweep``, unless a profile moves it) under the working
    folder. Nothing is made; a full disk is found by a write."""
    from harness.pipeline.preflight import folder_takes_files

    key = "hydra.sweep.dir" if sweep else "hydra.run.dir"
    dirs = {k.lstrip("+"): v for k, eq, v in (o.partition("=") for o in given)
            if eq and k.lstrip("+") in ("hydra.run.dir", "hydra.sweep.dir") and v.strip()}
    if key not in dirs and not any(o.startswith(("profile=", "+profile=")) for o in given):
        dirs[key] = "multirun" if sweep else "outputs"
    for name, value in dirs.items():
        fixed = value.split("${", 1)[0]
        try:
            folder_takes_files(Path(fixed or "."))
        except OSError as e:
            raise ConfigError(f"{name}={value} cannot be made or written ({e.strerror or e}): Hydra saves the run's "
                              f"config there; give a folder this user can write ({name}=...)") from None


def entry() -> None:
    """The app as a command: a misspelt key or choice and Ctrl-C end it in one line (a rerun
    resumes from the stage cache)."""
    argv = sys.argv[1:]
    from harness.secrets import mask_streams, secret_values
    from harness.streams import guard_streams

    guard_streams()  # output errors never end a run (`| head`, a full disk, an ASCII terminal)

    mask_streams(secret_values(overrides=argv))  # Hydra prints a failed job's overrides, keys and all
    if not {"-h", "--help", *OTHER_CONFIG}.intersection(a.split("=", 1)[0] for a in argv):
        from harness.registry import check_overrides, repeated_keys

        try:  # the nearest valid key or choice named, before Hydra's own report of it
            check_overrides(overrides(argv), sweep=bool({"-m", "--multirun"}.intersection(argv)))
            if line := repeated_keys(overrides(argv)):
                print(f"chunkbench: warning: {line}", file=sys.stderr)
        except ConfigError as e:
            print(f"chunkbench: error: {e}", file=sys.stderr)
            sys.exit(2)
    try:
        if not {"-h", "--help", "--cfg", "-c", "--info", "-i"}.intersection(argv):  # those write no outputs/
            check_output_dirs(overrides(argv), sweep=bool({"-m", "--multirun"}.intersection(argv)))
        main()
    except ConfigError as e:
        print(f"chunkbench: error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    entry()
