"""``hydra/sweeper=table``: a paper table's grid points as a sweep's jobs.

Hydra's basic sweeper takes a product of values; a table's grid is a list of points, each its own
overrides (rows and groups choose different datasets and chunkers). This sweeper hands that list
to the configured launcher (SLURM through submitit under ``profile=cluster``), in one batch: one
job array. What to queue and how a job runs is :mod:`harness.report.tables.submit`, or, for a
challenge of the tables (``challenge``: the challenger as JSON), :mod:`harness.report.challenge.cluster`.
"""

from __future__ import annotations

from typing import Any

from hydra.core.plugins import Plugins
from hydra.plugins.sweeper import Sweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


class TableSweeper(Sweeper):
    def __init__(self, tables: list[str], challenge: str | None = None) -> None:
        self.tables, self.challenge = list(tables), challenge

    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        self.hydra_context, self.config = hydra_context, config
        self.launcher = Plugins.instance().instantiate_launcher(hydra_context=hydra_context,
                                                                task_function=task_function, config=config)

    def sweep(self, arguments: list[str]) -> Any:
        from harness.report.tables.submit import pending, report
        from harness.types import ConfigError

        if not self.tables:
            raise ConfigError("hydra/sweeper=table: name the tables (hydra.sweeper.tables=[hichunk/table3,...])")
        loader = self.hydra_context.config_loader

        def compose(overrides: list[str]) -> DictConfig:
            return loader.load_sweep_config(master_config=self.config, sweep_overrides=overrides)

        if self.challenge:
            from harness.report.challenge import cluster

            jobs = cluster.pending(self.tables, self.challenge, str(self.config.scale), arguments, compose)
        else:
            jobs = pending(self.tables, str(self.config.scale), arguments, compose)
        if not jobs:
            print("nothing to queue: every point is recorded")
            return []
        print(f"queueing {len(jobs)} job(s) through {self.config.hydra.launcher._target_.rsplit('.', 1)[-1]}")
        returns = self.launcher.launch([job.overrides for job in jobs], initial_job_idx=0)
        report(jobs, returns)
        return returns
