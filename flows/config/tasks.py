"""The sections of the task producers after curation: logic puzzles, code problems, SWE tasks, and the
general domain with its generative reward model (`logic`, `code`, `swe`, `genrm`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from flows.config.base import EndpointConfig, Section
from flows.config.training import ModelConfig

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
        description="train on general tasks only when the run's judge beats every trivial judge on the "
        "balanced held-out measures by gate_margin (off: train on it anyway, e.g. to test the path)",
    )
    gate_margin: float = Field(
        0.10,
        ge=0,
        description="balanced accuracy the judge must have above the best trivial judge (pairwise: always "
        "the reference, the first shown, the longer text, random; grades: a constant grade)",
    )
    policy_gate_prompts: int = Field(
        64,
        ge=0,
        description="the second gate: general prompts the curriculum's starting checkpoint answers "
        "(train.group_size times each) for the judge to order as their rule grade does, policy_gate_margin "
        "above a constant judge's 0.5, before a stage trains on it (flows/curriculum/policy_gate.py); 0: off",
    )
    policy_gate_margin: float = Field(
        0.0,
        ge=0,
        le=0.5,
        description="how far above a constant judge's 0.5 the second gate asks the judge's order of the "
        "policy's answers to be, its 95% interval above 0.5 either way (0: the group advantages point where "
        "the rule's do more often than not, with confidence; 0.10, the first gate's margin, refused judges "
        "whose stage gained: flows/genrm/README.md, the eighth round)",
    )
    general_items: int = Field(
        1000,
        ge=1,
        description="open-ended items written to {run}-general (with 200 the policy's warm start learns "
        "their templates but not to carry a prompt's facts into its answer; 1000 with `eval.fractions` "
        "general 0.3 train on about 700, as 800 at 0.1 did, and hold out about 300: flows/genrm/README.md)",
    )
    train_prompts: int = Field(120, ge=4, description="prompts per domain (math, logic, general) to train on")
    eval_prompts: int = Field(24, ge=2, description="held-out prompts per domain to evaluate on")
    judge_steps: int = Field(
        450,
        ge=1,
        description="SFT steps of the judge (450: Best-of-8 past halfway on average over three seeds, where "
        "300 fall short; `m1 run` trains it beside curation, flows/genrm/ahead.py)",
    )
    judge_domains: list[Literal["math", "logic", "general"]] = Field(
        default_factory=lambda: ["general"],
        description="domains of the judge's labelled training and held-out responses (the curricula's judge "
        "scores general items; math and logic responses are more to learn in the same steps)",
    )
    rationale: bool = Field(
        False,
        description="the judge learns to quote the facts it compares before its verdict (`Stated: X. "
        "Reference: Y. Grade: N`; `Asked: X. A: Y. B: Z. Verdict: [[A]]`); needs judge_max_tokens for it",
    )
    pair_grades: bool = Field(
        False,
        description="the pairwise judge first grades each response on the five-grade rubric, then compares "
        "(`A: 4. B: 2. Verdict: [[A]]`): its verdict is the comparison of two one-text judgments",
    )
    judge_init: str | None = Field(
        None,
        description="an m1model checkpoint the judge starts from (its weights and tokenizer) instead of a "
        "fresh judge_model",
    )
    pair_training: Literal["reference", "reference-swapped", "all-swapped", "pointwise"] = Field(
        "pointwise",
        description="the judge's pairwise examples: each response against its prompt's reference in one "
        "random order (reference) or in both (reference-swapped), or every two responses of a prompt in "
        "both orders (all-swapped, of pair_domains); or none: each response of pair_domains graded alone "
        "against the question (pointwise), and the judge's pairs are judged that way (pair_method) and "
        "its grades against both the reference and the question, the lower counting (grade_views)",
    )
    pair_domains: list[str] = Field(
        default_factory=lambda: ["general"],
        description="domains of the swapped or pointwise pairwise examples (empty: all); the curricula's "
        "pairwise judge scores general items",
    )
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
    judges: int = Field(
        1,
        ge=1,
        le=8,
        description="the run's own judge as an ensemble of this many, alike but for their initial weights "
        "(judge i trains at judge_model.seed + i); a judgment pools their grades, so the stage rides on "
        "the judges' mean rather than on one draw (reward-model ensembles, Coste et al. 2023; "
        "flows/genrm/README.md, the thirteenth and fourteenth rounds: 300 judge_steps each hold, 150 do not)",
    )
    judge_max_tokens: int = Field(
        16,
        ge=1,
        description="tokens the run's own judge may write per judgment: it answers `Grade: N` or "
        "`Verdict: [[X]]` then EOS (a judge at M1_GENRM_URL that reasons takes M1_GENRM_MAX_TOKENS)",
    )
    k: int = Field(1, ge=1, description="judge samples averaged per five-grade judgment")
    grade_score: Literal["sampled", "expected"] = Field(
        "sampled",
        description="a judged reward's grade: as the judge wrote it (sampled), or weighted by the judge's "
        "probabilities at its grade token (expected, G-Eval: needs the endpoint's logprobs); the judge's "
        "held-out measures read written grades either way",
    )
    constraint_weight: float = Field(0.5, ge=0, description="pairwise judge: weight of the constraint rules")
    port: int = Field(0, ge=0, le=65535, description="loopback port of the judge server; 0: a free one")
    seed: int = 0

    def member(self, i: int) -> GenRMConfig:
        """The settings judge ``i`` of the ensemble trains from: these, at judge_model.seed + i."""
        if i == 0:
            return self
        model = self.judge_model.model_copy(update={"seed": self.judge_model.seed + i})
        return self.model_copy(update={"judge_model": model})

    @property
    def pair_method(self) -> str:
        """How the judge this section trains judges a pair (`JudgeOptions.pair_method`)."""
        return "pointwise" if self.pair_training == "pointwise" else "pairwise"

    @property
    def grade_views(self) -> str:
        """What the judge this section trains grades against (`JudgeOptions.grade_views`): a judge trained
        on the pointwise examples also knows the question-only prompt, so it grades both ways."""
        return "both" if self.pair_training == "pointwise" else "reference"
