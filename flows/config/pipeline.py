"""The whole config (`PipelineConfig`, one section per stage) and where the data steps run (`runner`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from flows.config.base import Section
from flows.config.data import CurateConfig, DataConfig
from flows.config.tasks import CodeTasksConfig, GenRMConfig, LogicTasksConfig, SWEConfig
from flows.config.training import EvalConfig, ModelConfig, TrainConfig


class RunnerConfig(Section):
    """Where the data subflows' tasks run: threads in this process, or Dask (a local cluster of worker
    processes, or an existing scheduler)."""

    kind: Literal["local", "dask"] = "local"
    dask_address: str | None = Field(None, description="scheduler of an existing Dask cluster")
    workers: int = Field(2, ge=1, description="worker processes of the local Dask cluster")
    shards: int = Field(1, ge=1, description="shards each map step runs over")


class PipelineConfig(Section):
    """Everything one `m1 run` needs. Defaults run the whole DAG on bundled tiny data in minutes."""

    name: str = Field("m1-tiny", description="run name; datasets and checkpoints are stored under it")
    home: str | None = Field(None, description="dataset store root; default $M1_HOME or ./.m1")
    plugin_dirs: list[str] = Field(default_factory=list, description="extra verifier plugin directories")
    runner: RunnerConfig = RunnerConfig()
    data: DataConfig = DataConfig()
    curate: CurateConfig = CurateConfig()
    logic: LogicTasksConfig = LogicTasksConfig()
    code: CodeTasksConfig = CodeTasksConfig()
    model: ModelConfig = ModelConfig()
    train: TrainConfig = TrainConfig()
    eval: EvalConfig = EvalConfig()
    swe: SWEConfig = SWEConfig()
    genrm: GenRMConfig = GenRMConfig()
