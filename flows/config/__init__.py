"""One configuration model for the pipeline, shared by the CLI, the flows and the deployments.

Load it from TOML, YAML or JSON (`load_config`), override single fields from the CLI with
``--set train.rl_lr=1e-3`` (`apply_overrides`), and pass it as a flow parameter: Prefect renders a form
for it in the UI. Each section belongs to one stage of the pipeline, and each module here holds the
sections of one part of it:

- `base.py`: `Section`, and the endpoint and policy settings several sections share;
- `data.py`: the bundled data and benchmarks (`data`), the curation flow and its steps (`curate`);
- `tasks.py`: the task producers (`logic`, `code`, `swe`) and the generative reward model (`genrm`);
- `training.py`: the model (`model`), training (`train`) and held-out evaluation (`eval`);
- `pipeline.py`: `PipelineConfig`, the whole, and the data steps' runner (`runner`);
- `loading.py`: reading a file and applying ``--set`` overrides.

Everything is imported from here (`from flows.config import PipelineConfig`); the modules are where to
read or change a section.
"""

from flows.config.base import EndpointConfig, PolicyConfig, Section
from flows.config.data import (
    PRESET_NAMES,
    BenchmarkConfig,
    CleanConfig,
    ContaminationConfig,
    CurateConfig,
    DataConfig,
    EmbeddingConfig,
    MinhashConfig,
    PassRateConfig,
    SourceConfig,
)
from flows.config.loading import apply_overrides, load_config
from flows.config.pipeline import PipelineConfig, RunnerConfig
from flows.config.tasks import (
    SHORT_ANSWER_LOGIC_TASKS,
    CodeTasksConfig,
    GenRMConfig,
    LogicTasksConfig,
    SWEConfig,
)
from flows.config.training import EvalConfig, LengthBiasConfig, ModelConfig, TrainConfig

__all__ = [
    "PRESET_NAMES",
    "SHORT_ANSWER_LOGIC_TASKS",
    "BenchmarkConfig",
    "CleanConfig",
    "CodeTasksConfig",
    "ContaminationConfig",
    "CurateConfig",
    "DataConfig",
    "EmbeddingConfig",
    "EndpointConfig",
    "EvalConfig",
    "GenRMConfig",
    "LengthBiasConfig",
    "LogicTasksConfig",
    "MinhashConfig",
    "ModelConfig",
    "PassRateConfig",
    "PipelineConfig",
    "PolicyConfig",
    "RunnerConfig",
    "SWEConfig",
    "Section",
    "SourceConfig",
    "TrainConfig",
    "apply_overrides",
    "load_config",
]
