"""One configuration model for the pipeline, shared by the CLI, the flows and the deployments.

Load it from TOML, YAML or JSON (`load_config`), override single fields from the CLI with
``--set train.rl_steps=8`` (`apply_overrides`), and pass it as a flow parameter: Prefect renders a form
for it in the UI. Each section belongs to one stage of the pipeline.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from flows.errors import ConfigError


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DataConfig(Section):
    """The bundled synthetic math data: problems with planted duplicates, near-duplicates and leaks."""

    n_problems: int = Field(800, ge=8, description="clean, distinct problems to generate")
    n_exact_duplicates: int = Field(12, ge=0, description="planted exact duplicates (after normalisation)")
    n_near_duplicates: int = Field(12, ge=0, description="planted near-duplicates (small edits)")
    n_benchmark_leaks: int = Field(8, ge=0, description="planted copies of benchmark items")
    n_unparseable: int = Field(6, ge=0, description="planted items whose reference answer cannot be parsed")
    seed: int = 0
    input_path: str | None = Field(
        None, description="JSONL/Parquet of RL items to use instead of the generator"
    )
    benchmark_paths: list[str] = Field(default_factory=list, description="benchmark files for contamination")


class SourceConfig(Section):
    """One input of the curation flow: a JSONL/Parquet file or a `datasets` folder, mapped to the schema."""

    path: str
    name: str | None = Field(None, description="source name (default: the file name)")
    mapping: dict[str, str] = Field(default_factory=dict, description="canonical column -> file column")
    domain: str = "math"
    task: str = ""
    split: str | None = Field(None, description="split of a DatasetDict folder")


class CurateConfig(Section):
    sources: list[SourceConfig] = Field(
        default_factory=list,
        description="inputs (default: data.input_path "
        "or the bundled generator); deduplicated across sources, first wins",
    )
    sft_path: str | None = Field(None, description="SFT set: RL items duplicating its items are dropped")
    clean: bool = Field(True, description="drop unusable items, reformulate multiple choice")
    rewrite_endpoint: str | None = Field(None, description="OpenAI-compatible URL (…/v1) for MC rewrites")
    rewrite_model: str = ""
    minhash_mode: Literal["fast", "compat"] = Field(
        "fast", description="compat: datasketch-identical signatures"
    )
    pass_rate: bool = Field(False, description="run pass-rate filtering (needs a policy)")
    policy_endpoint: str | None = Field(None, description="OpenAI-compatible URL (…/v1) of the policy")
    policy_model: str = ""
    policy_api: Literal["chat", "completions"] = "chat"
    policy_checkpoint: str | None = Field(None, description="m1model checkpoint folder, sampled in process")
    pass_rate_max_tokens: int = Field(1024, ge=1)
    shards: int = Field(1, ge=1, description="shards each map step runs over")
    dask_address: str | None = Field(None, description="scheduler of an existing Dask cluster (runner dask)")
    minhash_threshold: float = Field(0.7, gt=0, lt=1, description="Jaccard threshold for near-duplicates")
    minhash_num_perm: int = Field(128, ge=16)
    shingle_size: int = Field(5, ge=1, description="word n-gram size for MinHash shingles")
    contamination_ngram: int = Field(13, ge=3, description="n for n-gram overlap against benchmarks")
    embedding_threshold: float = Field(0.95, gt=0, le=1, description="cosine threshold for embedding dedup")
    use_embeddings: bool = Field(False, description="run embedding dedup and embedding contamination too")
    pass_rate_low: float = Field(0.0, ge=0, le=1)
    pass_rate_high: float = Field(0.9, ge=0, le=1)
    pass_rate_k: int = Field(8, ge=1)
    runner: Literal["local", "dask"] = "local"


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


class TrainConfig(Section):
    algorithm: Literal["cispo", "grpo", "dapo"] = "cispo"
    sft_steps: int = Field(500, ge=0)
    sft_lr: float = 3e-3
    rl_steps: int = Field(8, ge=0)
    rl_lr: float = 5e-4
    prompts_per_step: int = Field(8, ge=1)
    group_size: int = Field(8, ge=2, description="responses sampled per prompt (G)")
    max_new_tokens: int = Field(12, ge=1)
    temperature: float = Field(1.0, gt=0)
    eps_is_low: float = Field(
        1e6, description="CISPO lower IS-weight bound: effectively none, as in the paper"
    )
    eps_is_high: float = Field(2.0, description="CISPO upper IS-weight bound")
    eps_low: float = Field(0.2, description="GRPO/DAPO clip range")
    eps_high: float = Field(0.28, description="DAPO clip-higher")
    updates_per_batch: int = Field(2, ge=1, description="off-policy updates per generated batch")
    dynamic_sampling: bool = True
    max_sampling_rounds: int = Field(
        3, ge=1, description="dynamic sampling: generation rounds to refill a batch"
    )
    unified_mask: bool = Field(
        False, description="CISPO with the PPO trust-region token mask (paper Eq. 6-7)"
    )
    normalize_std: bool = Field(
        True, description="divide group-relative advantages by the group's reward std"
    )
    overlong_cache: int = Field(
        0, ge=0, description="DAPO soft overlong penalty over the window's last N tokens"
    )
    grad_clip: float = 1.0
    batch_size: int = 16
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


class EvalConfig(Section):
    n_items: int = Field(100, ge=1, description="held-out items to evaluate on")
    max_new_tokens: int = 12


class PipelineConfig(Section):
    """Everything one `m1 run` needs. Defaults run the whole DAG on bundled tiny data in minutes."""

    name: str = Field("m1-tiny", description="run name; datasets and checkpoints are stored under it")
    home: str | None = Field(None, description="dataset store root; default $M1_HOME or ./.m1")
    plugin_dirs: list[str] = Field(default_factory=list, description="extra verifier plugin directories")
    data: DataConfig = DataConfig()
    curate: CurateConfig = CurateConfig()
    model: ModelConfig = ModelConfig()
    train: TrainConfig = TrainConfig()
    eval: EvalConfig = EvalConfig()


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


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> PipelineConfig:
    data = _read(Path(path)) if path else {}
    for item in overrides or []:
        _set_dotted(data, item)
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{path or 'config'}: {_validation_message(exc)}") from None


def apply_overrides(config: PipelineConfig, overrides: list[str]) -> PipelineConfig:
    data = config.model_dump()
    for item in overrides:
        _set_dotted(data, item)
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"override: {_validation_message(exc)}") from None


def _set_dotted(data: dict[str, Any], item: str) -> None:
    """Apply ``a.b.c=value``; the value is parsed as YAML so numbers, booleans and lists work."""
    if "=" not in item:
        raise ConfigError(f"override {item!r}: expected key=value, e.g. train.rl_steps=8")
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
