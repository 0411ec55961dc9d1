"""One configuration model for the pipeline, shared by the CLI, the flows and the deployments.

Load it from TOML, YAML or JSON (`load_config`), override single fields from the CLI with
``--set train.rl_lr=1e-3`` (`apply_overrides`), and pass it as a flow parameter: Prefect renders a form
for it in the UI. Each section belongs to one stage of the pipeline.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from flows.errors import ConfigError
from verifiers.endpoint import Endpoint, EndpointSettings


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EndpointConfig(EndpointSettings):
    """An OpenAI-compatible endpoint (vLLM, `m1 serve model`, a hosted API). The API key is read from
    ``$OPENAI_API_KEY`` rather than stored here, so it never shows in the UI's parameter form."""

    # The fields are verifiers.endpoint.EndpointSettings' (the judges' options and the client share them);
    # the config adds only its own error for an endpoint that is not configured.
    def client(self) -> Endpoint:
        """The project's one client (verifiers.endpoint.Endpoint) for this endpoint."""
        if not self.url:
            raise ConfigError("no endpoint configured (url is unset)")
        return super().client()


class PolicyConfig(Section):
    """Where sampled responses come from (pass-rate filtering, logic calibration): an m1model checkpoint
    in process, else an endpoint. In `m1 run`, an unset policy means the run's SFT warm-start model."""

    checkpoint: str | None = Field(None, description="m1model checkpoint folder, sampled in process")
    endpoint: EndpointConfig = EndpointConfig()
    max_tokens: int = Field(1024, ge=1)
    temperature: float = Field(1.0, ge=0)

    @property
    def configured(self) -> bool:
        return bool(self.checkpoint or self.endpoint.url)


# The public schemas an ingested file may follow. The config names them (checking a config needs no
# curation code, which imports the config); flows/curate/presets.py converts each, and a test keeps the two
# lists one (tests/curate/test_presets.py).
PRESET_NAMES = ("gsm8k", "math", "numina", "humaneval", "mbpp", "apps", "codecontests", "swebench")
_PRESET_HELP = (
    f"the file's public schema ({', '.join(PRESET_NAMES)}; "
    "flows/curate/presets.py); default: detected from the columns, else columns by their usual names"
)


def _check_preset(name: str | None) -> str | None:
    if name is not None and name not in PRESET_NAMES:
        raise ValueError(f"unknown preset {name!r} (known: {', '.join(PRESET_NAMES)})")
    return name


class BenchmarkConfig(Section):
    """A benchmark file (JSONL/Parquet): its prompts are checked for contamination, and where it has
    reference answers it is also an evaluation set."""

    path: str
    name: str | None = Field(None, description="benchmark name (default: the file name)")
    mapping: dict[str, str] = Field(
        default_factory=dict, description="canonical column -> file column, e.g. prompt = 'question'"
    )
    preset: str | None = Field(None, description=_PRESET_HELP)

    @field_validator("preset")
    @classmethod
    def _preset(cls, name: str | None) -> str | None:
        return _check_preset(name)

    @property
    def label(self) -> str:
        return self.name or Path(self.path).stem


class DataConfig(Section):
    """The bundled synthetic math data (problems with planted duplicates, near-duplicates and leaks),
    unless `curate.sources` or `input_path` name the user's own data; and the benchmarks."""

    # The bundled generator's settings: a run on the user's own data (curate.sources, input_path) neither
    # uses nor records them.
    GENERATOR: ClassVar[frozenset[str]] = frozenset(
        {
            "n_problems",
            "n_exact_duplicates",
            "n_near_duplicates",
            "n_benchmark_leaks",
            "n_unparseable",
            "seed",
        }
    )

    n_problems: int = Field(1600, ge=8, description="clean, distinct problems to generate")
    n_exact_duplicates: int = Field(12, ge=0, description="planted exact duplicates (after normalisation)")
    n_near_duplicates: int = Field(12, ge=0, description="planted near-duplicates (small edits)")
    n_benchmark_leaks: int = Field(8, ge=0, description="planted copies of benchmark items")
    n_unparseable: int = Field(6, ge=0, description="planted items whose reference answer cannot be parsed")
    seed: int = 0
    input_path: str | None = Field(
        None, description="JSONL/Parquet of RL items instead of the generator (shorthand for one source)"
    )
    benchmarks: list[BenchmarkConfig] = Field(
        default_factory=list, description="benchmark files: contamination checks and evaluation"
    )


class SourceConfig(Section):
    """One input of the curation flow: a JSONL/Parquet file or a `datasets` folder, mapped to the schema."""

    path: str
    name: str | None = Field(None, description="source name (default: the file name)")
    mapping: dict[str, str] = Field(
        default_factory=dict, description="canonical column or metadata.<key> -> file column"
    )
    domain: str = "math"
    task: str = ""
    split: str | None = Field(None, description="split of a DatasetDict folder")
    preset: str | None = Field(None, description=_PRESET_HELP)

    @field_validator("preset")
    @classmethod
    def _preset(cls, name: str | None) -> str | None:
        return _check_preset(name)


class CleanConfig(Section):
    enabled: bool = Field(True, description="drop unusable items, reformulate multiple choice")
    rewrite: EndpointConfig = Field(
        EndpointConfig(), description="model that rewrites multiple choice (default: a rule)"
    )


class MinhashConfig(Section):
    threshold: float = Field(0.7, gt=0, lt=1, description="Jaccard threshold for near-duplicates")
    num_perm: int = Field(128, ge=16)
    shingle_size: int = Field(5, ge=1, description="word n-gram size of the shingles")
    mode: Literal["fast", "compat"] = Field("fast", description="compat: datasketch-identical signatures")


class EmbeddingConfig(Section):
    enabled: bool = Field(False, description="embedding dedup and embedding contamination too")
    threshold: float = Field(0.95, gt=0, le=1, description="cosine threshold")


class ContaminationConfig(Section):
    ngram: int = Field(13, ge=3, description="n for n-gram overlap against benchmarks")


class PassRateConfig(Section):
    """Section 4.1: keep items with low < pass rate < high over k samples of a policy."""

    enabled: bool = False
    policy: PolicyConfig = PolicyConfig()
    k: int = Field(8, ge=1)
    low: float = Field(0.0, ge=0, le=1)
    high: float = Field(0.9, ge=0, le=1)


class CurateConfig(Section):
    """The curation flow: one section per step, in the order they run."""

    sources: list[SourceConfig] = Field(
        default_factory=list,
        description="inputs (default: data.input_path "
        "or the bundled generator); deduplicated across sources, first wins",
    )
    sft_path: str | None = Field(None, description="SFT set: RL items duplicating its items are dropped")
    clean: CleanConfig = CleanConfig()
    minhash: MinhashConfig = MinhashConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    contamination: ContaminationConfig = ContaminationConfig()
    pass_rate: PassRateConfig = PassRateConfig()
    max_removed_share: float = Field(
        0.9,
        ge=0,
        le=1,
        description="a step (pass rate aside) that removes more than this share of a source's rows fails "
        "the run, naming the column to map; 1: never",
    )


# Logic tasks whose gold answers stay within 8 characters at levels 1-3, so that "<answer>...</answer>"
# fits the 12-20 tokens the bundled tiny model generates (tests/tasks/test_logic.py holds it to that).
SHORT_ANSWER_LOGIC_TASKS = [
    "bit_manipulation",
    "boolean_expressions",
    "dyck_language",
    "dyck_language_errors",
    "object_counting",
    "time_sequence",
    "word_sorting_mistake",
]


class LogicTasksConfig(Section):
    """SynLogic-style logic items as data (`{run}-synlogic`, flows/tasks/logic.py): items split evenly
    over the tasks that have a band, and within a task over its band's levels (plus `headroom`)."""

    enabled: bool = True
    n_items: int = Field(420, ge=1, description="items to generate (before deduplication)")
    tasks: list[str] | None = Field(
        default_factory=lambda: list(SHORT_ANSWER_LOGIC_TASKS),
        description="task names (`m1 logic list`); null: every task. Default: short answers (tiny model)",
    )
    calibrated: bool = Field(True, description="use the bands `m1 logic calibrate` stored, if any")
    default_band: tuple[int, int] = Field(
        (1, 2), description="difficulty band low..high of every task when no calibration is stored"
    )
    headroom: int = Field(
        1, ge=0, description="levels above a band's top also generated, for stages that raise difficulty"
    )
    seed: int = 0

    @field_validator("default_band")
    @classmethod
    def _band(cls, band: tuple[int, int]) -> tuple[int, int]:
        if not 1 <= band[0] <= band[1]:
            raise ValueError("expected 1 <= low <= high")
        return band


class CodeTasksConfig(Section):
    """Programming problems with sandbox-checked test suites (`{run}-code`, flows/tasks/code.py), drawn
    from the families in flows/data/code_problems round-robin."""

    enabled: bool = True
    n_problems: int = Field(34, ge=1, description="problems to generate (before deduplication)")
    families: list[str] | None = Field(None, description="problem families; null: every family")
    tests_per_problem: int = Field(5, ge=2, le=100, description="test inputs each family proposes")
    seed: int = 0
    time_limit_s: float = Field(2.0, gt=0, description="CPU seconds per test run (recorded per item)")
    memory_mb: int = Field(512, ge=16, description="memory per test run (recorded per item)")
    workers: int = Field(2, ge=1, description="problems checked at once, per shard")
    testgen: EndpointConfig = Field(
        EndpointConfig(), description="model proposing extra test inputs (verifiers/testgen.py)"
    )
    testgen_inputs: int = Field(8, ge=1, description="extra inputs asked of the testgen model per problem")


class RunnerConfig(Section):
    """Where the data subflows' tasks run: threads in this process, or Dask (a local cluster of worker
    processes, or an existing scheduler)."""

    kind: Literal["local", "dask"] = "local"
    dask_address: str | None = Field(None, description="scheduler of an existing Dask cluster")
    workers: int = Field(2, ge=1, description="worker processes of the local Dask cluster")
    shards: int = Field(1, ge=1, description="shards each map step runs over")


class ModelConfig(Section):
    """The bundled hybrid lightning-attention MoE model (MiniMax-Text-01/M1 architecture, tiny)."""

    hidden_size: int = 64
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 16
    intermediate_size: int = 96
    num_local_experts: int = 4
    num_experts_per_tok: int = 2
    # M1 puts one softmax layer after every seven lightning layers (8); the 4-layer default uses 4 so that
    # the tiny model is still hybrid: three lightning layers, then one softmax layer.
    softmax_every: int = Field(
        4, ge=1, description="one softmax-attention layer after every N-1 lightning layers"
    )
    vocab_size: int = Field(
        512, ge=259, description="BPE vocabulary: 256 byte symbols + 3 special tokens at least"
    )
    fp32_lm_head: bool = Field(True, description="the paper's precision fix: LM head in FP32")
    seed: int = 0


class LengthBiasConfig(Section):
    """Length-bias monitoring and mitigation for judge-scored domains (m1model/rl/length_bias.py)."""

    enabled: bool = Field(True, description="monitor reward-length correlation and length vs success trends")
    domains: list[str] = Field(default_factory=lambda: ["general"], description="domains scored by a judge")
    window: int = Field(4, ge=2, description="steps over which the trends are fitted")
    length_growth: float = Field(
        0.03, description="alarm: mean length grows faster than this per step (relative)"
    )
    success_growth: float = Field(0.01, description="... while success grows slower than this per step")
    min_corr: float = Field(0.1, description="... and reward-length Spearman exceeds this")
    alarm_ratio: float = Field(
        1.5, ge=0, description="... and responses average more than this multiple of their reference's length"
    )
    on_alarm: Literal["log", "lower_weight", "stop"] = "log"
    weight_factor: float = Field(0.5, gt=0, le=1, description="lower_weight: factor on the domain's weight")
    shaping: bool = Field(False, description="penalise judged responses longer than slack x the reference")
    shaping_coef: float = Field(0.5, ge=0, description="largest penalty (reward units)")
    shaping_slack: float = Field(1.5, ge=1, description="lengths up to slack x the reference's are free")
    group_normalize: bool = Field(False, description="normalise judged rewards within each prompt's group")
    clip_min: float | None = Field(None, description="clip judged rewards below (after shaping)")
    clip_max: float | None = Field(None, description="clip judged rewards above (after shaping)")


class TrainConfig(Section):
    algorithm: Literal["cispo", "grpo", "dapo", "rft"] = Field(
        "cispo", description="RL loss: cispo (the paper), grpo, dapo, or rft (rejection-sampling fine-tuning)"
    )
    # The bundled model learns to copy a stated number only after ~1000 steps of 16 (flows/experiments/
    # README.md); 500 stopped before any skill beyond the answer format, and RL had nothing to sharpen.
    sft_steps: int = Field(1200, ge=0)
    sft_lr: float = 3e-3
    # Measured on the bundled model (flows/experiments/README.md): 2e-3 collapses the format within 5
    # steps, 5e-4 leaves CISPO (no trust region) unstable under off-policy updates, 1e-4 learns steadily.
    rl_lr: float = 1e-4
    prompts_per_step: int = Field(16, ge=1)
    group_size: int = Field(8, ge=2, description="responses sampled per prompt (G)")
    max_new_tokens: int = Field(16, ge=1)
    temperature: float = Field(1.0, gt=0)
    eps_is_low: float = Field(
        1e6, description="CISPO lower IS-weight bound: effectively none, as in the paper"
    )
    eps_is_high: float = Field(2.0, description="CISPO upper IS-weight bound")
    eps_low: float = Field(0.2, description="GRPO/DAPO clip range")
    eps_high: float = Field(0.28, description="DAPO clip-higher")
    updates_per_batch: int = Field(
        4, ge=1, description="off-policy updates per generated batch (each on prompts_per_step / N groups)"
    )
    dynamic_sampling: bool = True
    max_sampling_rounds: int = Field(
        3, ge=1, description="dynamic sampling: generation rounds to refill a batch"
    )
    unified_mask: bool = Field(
        False, description="CISPO with the PPO trust-region token mask (paper Eq. 6-7)"
    )
    sample_level: float = Field(
        0.0,
        ge=0,
        le=1,
        description="section 5: share of the sample-level mean mixed into token-level weights",
    )
    normalize_std: bool = Field(
        True, description="divide group-relative advantages by the group's reward std"
    )
    overlong_cache: int = Field(
        0, ge=0, description="DAPO soft overlong penalty over the window's last N tokens"
    )
    grad_clip: float = 1.0
    batch_size: int = 16
    micro_batch_size: int = Field(
        0,
        ge=0,
        description="sequences per forward pass of an RL update (gradients accumulate beyond); "
        "0: max(batch_size, group_size)",
    )
    seed: int = 0
    curriculum: str = Field(
        "tiny", description="bundled curriculum name (tiny, m1) or path to a curriculum TOML"
    )
    init_from: str | None = Field(
        None,
        description="HF checkpoint folder for the first stage; default: a fresh model with an SFT warm start",
    )
    torch_threads: int = Field(
        1,
        ge=0,
        description="intra-op CPU threads for training; 1 is fastest for tiny models, 0: torch's default",
    )
    checkpoint_every: int = Field(
        1, ge=0, description="save a resumable checkpoint every N RL steps (0: stage end)"
    )
    # M1 section 3.2 stops a response after 3000 tokens in a row each above p 0.99: a degenerate loop deep
    # in a 40K-80K window. Scaled down to the tiny windows (6 tokens) it stopped every confident answer
    # ("<answer>2</answer>" is 8 tokens above 0.99 once learnt): RL then scored sharpening as failure and
    # trained the model away from its right answers. A run must be far longer than any answer.
    repetition_run: int = Field(
        3000, ge=1, description="early truncation: stop after N consecutive tokens each above repetition_prob"
    )
    repetition_prob: float = Field(0.99, gt=0, lt=1)
    window_ppl_steps: int = Field(
        2, ge=1, description="steps over which generated perplexity must be stable before widening"
    )
    window_ppl_tol: float = Field(0.1, gt=0, description="relative perplexity change counted as stable")
    samples_per_step: int = Field(
        4, ge=0, description="responses with their rewards logged per step (samples.jsonl, artifact)"
    )
    tensorboard: bool = Field(False, description="also log step metrics for TensorBoard (extra `tb`)")
    length_bias: LengthBiasConfig = Field(
        LengthBiasConfig(), description="length-bias monitor and mitigations for judge-scored domains"
    )
    nproc: int = Field(
        1,
        ge=1,
        description="training processes: >1 launches torchrun (data parallel; gloo on CPU, nccl on GPUs)",
    )
    parallel: Literal["ddp", "fsdp"] = Field(
        "ddp", description="with nproc > 1: DDP (whole model per rank) or FSDP2 (parameters sharded)"
    )
    rollout: Literal["engine", "vllm"] = Field(
        "engine",
        description="rollout sampler: the bundled engine, or vLLM (extra gpu) with weights pushed per update",
    )
    vllm_gpu_memory: float = Field(
        0.3, gt=0, le=1, description="with rollout = vllm: share of each GPU vLLM takes (weights + KV cache)"
    )


class EvalConfig(Section):
    """Held-out evaluation: a fixed fraction of every dataset that training never sees."""

    fraction: float = Field(0.1, gt=0, lt=1, description="share of each dataset held out (by id hash)")
    n_items: int = Field(1000, ge=1, description="held-out items evaluated per domain (at most)")
    max_new_tokens: int = Field(
        24, ge=1, description="greedy tokens per answer: at least every stage's window"
    )
    every: int = Field(0, ge=0, description="validate every N RL steps inside a stage (0: start and end)")
    overfit_tolerance: float = Field(
        0.02, ge=0, description="warn when training reward rises and validation falls by more than this"
    )


class SWEConfig(Section):
    """SWE tasks (flows/swe): real repositories from pinned sdists, bugs injected by AST mutation and
    kept when the suite catches them, validated in their instance containers (Docker)."""

    enabled: bool = Field(True, description="run the SWE subflow (needs the Docker engine)")
    repos: list[str] = Field(
        default_factory=lambda: ["cachetools", "isodate", "toolz"], description="bundled repository profiles"
    )
    repos_dir: str | None = Field(
        None, description="where the task repositories live; default M1_HOME/swe/repos"
    )
    n_tasks: int = Field(3, ge=1, description="tasks to synthesise, spread over the repositories")
    seed: int = 0
    kinds: list[Literal["repair", "localize", "testgen"]] = Field(
        default_factory=lambda: ["repair", "localize", "testgen"], description="items written per task"
    )
    workers: int = Field(2, ge=1, description="containers (and image builds) at a time")
    candidates_per_task: int = Field(8, ge=1, description="mutants tried per wanted task before giving up")
    wall_s: float = Field(180.0, gt=0, description="wall-clock limit of one test run")
    memory_mb: int = Field(2048, ge=256, description="memory limit of one test run")
    statement: EndpointConfig = Field(
        EndpointConfig(), description="model that rewrites problem statements as issues (default: none)"
    )
    eval_rollouts: int = Field(
        2,
        ge=0,
        description="repair tasks the final policy answers in `m1 run`'s evaluation, scored in containers",
    )


class GenRMConfig(Section):
    """Generative reward models (flows/genrm): the general-domain data, the project's own judge (trained on
    labelled responses to math, logic and general items, then served by `m1 serve model`), its evaluation,
    and how the `genrm` judges call it."""

    enabled: bool = Field(True, description="write {run}-general and train, evaluate and serve the judge")
    gate: bool = Field(
        True,
        description="train on general tasks only when the run's judge beats the majority grade and "
        "'always the reference' on its held-out labels (off: train on it anyway, e.g. to test the path)",
    )
    general_items: int = Field(200, ge=1, description="open-ended items written to {run}-general")
    train_prompts: int = Field(120, ge=4, description="prompts per domain (math, logic, general) to train on")
    eval_prompts: int = Field(24, ge=2, description="held-out prompts per domain to evaluate on")
    judge_steps: int = Field(300, ge=1, description="SFT steps of the judge")
    judge_lr: float = Field(2e-3, gt=0)
    judge_batch_size: int = Field(16, ge=1)
    judge_model: ModelConfig = Field(
        ModelConfig(
            hidden_size=96,
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=24,
            intermediate_size=192,
            softmax_every=2,
            vocab_size=1024,
        ),
        description="the judge's size (a softmax layer every 2: judging is mostly exact lookups)",
    )
    judge_max_tokens: int = Field(
        16,
        ge=1,
        description="tokens the run's own judge may write per judgment: it answers `Grade: N` or "
        "`Verdict: [[X]]` then EOS (a judge at M1_GENRM_URL that reasons takes M1_GENRM_MAX_TOKENS)",
    )
    k: int = Field(1, ge=1, description="judge samples averaged per five-grade judgment")
    constraint_weight: float = Field(0.5, ge=0, description="pairwise judge: weight of the constraint rules")
    port: int = Field(0, ge=0, le=65535, description="loopback port of the judge server; 0: a free one")
    seed: int = 0


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


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise ConfigError(f"{path}: config file not found")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(text)
        elif path.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text) or {}
        elif path.suffix == ".json":
            data = json.loads(text)
        else:
            raise ConfigError(f"{path}: unknown config format {path.suffix!r} (use .toml, .yaml or .json)")
    except (tomllib.TOMLDecodeError, yaml.YAMLError, json.JSONDecodeError) as exc:
        first = str(exc).splitlines()[0]
        raise ConfigError(f"{path}: malformed {path.suffix[1:]}: {first}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a table of settings at the top level")
    return data


def _validation_message(exc: ValidationError) -> str:
    e = exc.errors()[0]
    where = ".".join(str(p) for p in e["loc"]) or "config"
    more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {e['msg']}{more}"


def _blame(exc: ValidationError, overrides: list[str]) -> str | None:
    """``override 'train.rl_lrr=1'`` when the first error lies under a key an override set (the last
    one, as it wins), else None: the error is the file's."""
    loc = tuple(str(p) for p in exc.errors()[0]["loc"])
    for item in reversed(overrides):
        key = tuple(item.split("=", 1)[0].strip().split("."))
        if loc[: len(key)] == key or key[: len(loc)] == loc:
            return f"override {item!r}"
    return None


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> PipelineConfig:
    data = _read(Path(path)) if path else {}
    for item in overrides or []:
        _set_dotted(data, item)
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as exc:
        where = _blame(exc, overrides or []) or path or "config"
        raise ConfigError(f"{where}: {_validation_message(exc)}") from None


def apply_overrides(config: PipelineConfig, overrides: list[str]) -> PipelineConfig:
    data = config.model_dump()
    for item in overrides:
        _set_dotted(data, item)
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{_blame(exc, overrides) or 'override'}: {_validation_message(exc)}") from None


def _set_dotted(data: dict[str, Any], item: str) -> None:
    """Apply ``a.b.c=value``; the value is parsed as YAML so numbers, booleans and lists work."""
    if "=" not in item:
        raise ConfigError(f"override {item!r}: expected key=value, e.g. train.rl_lr=1e-3")
    key, raw = item.split("=", 1)
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        value = raw
    node = data
    parts = key.strip().split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"override {item!r}: {part} is not a section")
    node[parts[-1]] = value
