"""The data sections: the bundled generator and the benchmarks (`data`), and the curation flow's inputs
and its steps' settings (`curate`, one section per step, as datatrove groups a step's settings)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, field_validator

from flows.config.base import EndpointConfig, PolicyConfig, Section

# The public schemas an ingested file may follow. The config names them (checking a config needs no
# curation code, which imports the config); flows/curate/presets/ converts each, and a test keeps the two
# lists one (tests/curate/test_presets.py).
PRESET_NAMES = ("gsm8k", "math", "numina", "humaneval", "mbpp", "apps", "codecontests", "swebench")
_PRESET_HELP = (
    f"the file's public schema ({', '.join(PRESET_NAMES)}; "
    "flows/curate/presets/); default: detected from the columns, else columns by their usual names"
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
    max_cluster: int = Field(
        10_000, ge=0, description="a cluster of more rows fails the step, naming it (0: no limit)"
    )


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
