"""Every field of the config either changes the inputs of each thing that reads it, or is declared not
to change any result, with its reason (flows/lineage.py): a walk over every field of the config model
perturbs each one and computes every thing's inputs with the functions the flows use, so a new field
cannot be forgotten and a declaration cannot lie. Plus the reasons a stale thing gives."""

from __future__ import annotations

import itertools
import types
import typing
from typing import Any, Literal, get_args, get_origin

import pytest
from pydantic import BaseModel, ValidationError

import flows.genrm.flow as genrm
import flows.swe.flow as swe
import flows.tasks.code as code
import flows.tasks.logic as logic
from flows.config import PipelineConfig
from flows.curate.flow import curation_inputs, pass_rate_inputs
from flows.curriculum import load_curriculum
from flows.curriculum.fingerprint import base_inputs, judged, stage_inputs
from flows.curriculum.settings import stage_train_config
from flows.evaluate import evaluation_inputs
from flows.genrm.judge_cache import judge_hashes
from flows.lineage import EXCEPT, NOT_RESULTS, READS, SWITCHES, changes, config_inputs, fingerprint, flatten

REFS = ["t-curated@v1", "t-synlogic@v2"]


def leaves(model: BaseModel, prefix: str = "") -> list[tuple[str, Any, Any]]:
    """(dotted name, annotation, value) of every leaf field, through nested sections."""
    out = []
    for name, info in type(model).model_fields.items():
        value, dotted = getattr(model, name), f"{prefix}{name}"
        if isinstance(value, BaseModel):
            out += leaves(value, dotted + ".")
        else:
            out.append((dotted, info.annotation, value))
    return out


def candidates(annotation, value) -> list[Any]:
    """Other values a field of this type may take, the likeliest to validate first."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return [a for a in args if a != value]
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if value is None:
            return [c for a in inner for c in candidates(a, None)]
        return [None, *[c for a in inner for c in candidates(a, value)]]
    if annotation is bool:
        return [not value]
    if annotation is int:
        return [1 if value is None else value + 1, 0 if value is None else value - 1, 2]
    if annotation is float:
        return [0.5 if value is None else value * 1.5 + 0.01, 0.5 if value is None else value / 2, 0.05]
    if annotation is str:
        return ["other.jsonl" if value is None else value + "x", "x"]
    if origin is list:
        (arg,) = args
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return [[*(value or []), arg.model_validate({"path": "extra.jsonl"})]]
        if get_origin(arg) is Literal:
            return [list(get_args(arg))[:1]]
        return [[*(value or []), "extra"], []]
    if origin is dict:
        if args[1] is float:  # a share per name
            return [{**(value or {}), "extra": 0.5}]
        return [{**(value or {}), "prompt": "question"}]
    if origin is tuple:
        return [(1, 3), (2, 2)]
    raise AssertionError(f"no candidate for {annotation!r}")


def perturbed(config: PipelineConfig, dotted: str, annotation, value) -> PipelineConfig:
    for candidate in candidates(annotation, value):
        data = config.model_dump()
        node = data
        *path, last = dotted.split(".")
        for part in path:
            node = node[part]
        node[last] = candidate.model_dump() if isinstance(candidate, BaseModel) else candidate
        if isinstance(candidate, list):
            node[last] = [c.model_dump() if isinstance(c, BaseModel) else c for c in candidate]
        try:
            return PipelineConfig.model_validate(data)
        except ValidationError:
            continue
    raise AssertionError(f"no valid other value for {dotted}")


def real_inputs(config: PipelineConfig) -> dict[str, Any]:
    """Every thing's inputs, computed by the functions the flows and the plan call."""
    tiny = load_curriculum("tiny")
    out = {
        "curated": curation_inputs(config, pass_rate=False),
        "curated+pass-rate": curation_inputs(config, pass_rate=True),
        "synlogic": logic.inputs(config),
        "code": code.inputs(config),
        "swe": swe.inputs(config),
        "general": genrm.inputs(config),
        "judge": "+".join(judge_hashes(config.genrm)),
        "pass-rate": pass_rate_inputs(config, "t-curated@v1", "policy"),
        "base": base_inputs(config, REFS),
        "evaluation": evaluation_inputs(config, "/nonexistent", tiny, REFS, {"math", "general"}),
    }
    for stage in tiny.stages:
        tc = stage_train_config(config.train, stage, tiny)
        out[f"stage {stage.name}"] = stage_inputs(
            config, stage.model_dump(), tc, tiny.verifiers, REFS, "start"
        )
    return {k: fingerprint(v) if isinstance(v, dict) else v for k, v in out.items()}


def keys(thing: str, config: PipelineConfig, dotted: str) -> set[str]:
    """Which of `real_inputs` a thing of READS is, for this field: a stage whose curriculum or own
    overrides set a train field does not read the config's value of it; the curated data reads the
    pass-rate settings only where `m1 curate run` filters inside curation (the filter on); a stage or the
    evaluation reads how a judge is asked only where a judge scores it."""
    tiny = load_curriculum("tiny")
    asked = dotted.startswith("genrm.")  # how a judge is asked: read only where a judge scores
    if thing == "stage":
        field = dotted.removeprefix("train.")
        return {
            f"stage {s.name}"
            for s in tiny.stages
            if not (dotted.startswith("train.") and field in tiny.overrides | s.overrides)
            and not (asked and not judged(tiny.verifiers, {k.split("/")[0] for k in s.mixture}))
        }
    if thing == "evaluation" and asked:
        return {thing} if judged(tiny.verifier_names(evaluation=True), {"math", "general"}) else set()
    if thing == "curated":
        return {"curated", "curated+pass-rate"}
    if thing == "pass-rate":
        return {"pass-rate", "curated+pass-rate"} if config.curate.pass_rate.enabled else {"pass-rate"}
    return {thing}


# A switch may change the inputs of the one thing it switches a step of: `m1 curate run` filters by pass
# rate inside curation when the filter is on.
SWITCHED = {"curate.pass_rate.enabled": {"curated+pass-rate"}}

CONFIG = PipelineConfig()
FIELDS = leaves(CONFIG)


def declared(dotted: str, table) -> bool:
    return any(dotted == p or dotted.startswith(p + ".") for p in table)


def readers(config: PipelineConfig, dotted: str) -> set[str]:
    """The things READS says read this field (for this config: the curated data reads the generator's
    settings only without sources of its own)."""
    things = {
        t
        for t, prefixes in READS.items()
        if declared(dotted, prefixes) and not declared(dotted, EXCEPT.get(t, ()))
    }
    if dotted in config_inputs("curated", config) or "curated" not in things:
        return things
    return things - {"curated"}


@pytest.fixture(scope="module")
def base_signature():
    return real_inputs(CONFIG)


@pytest.mark.parametrize(("dotted", "annotation", "value"), FIELDS, ids=[f[0] for f in FIELDS])
def test_every_field_changes_exactly_the_things_that_read_it_or_is_declared_not_to(
    dotted, annotation, value, base_signature
):
    other = perturbed(CONFIG, dotted, annotation, value)
    changed = {k for k, v in real_inputs(other).items() if v != base_signature[k]}
    if declared(dotted, NOT_RESULTS) or declared(dotted, SWITCHES):
        allowed = SWITCHED.get(dotted, set())
        assert changed <= allowed, f"{dotted} is declared not to change results, yet it changes {changed}"
        return
    expected = set().union(set(), *[keys(t, CONFIG, dotted) for t in readers(CONFIG, dotted)])
    assert expected, (
        f"{dotted}: read by no thing and not declared in NOT_RESULTS or SWITCHES (flows/lineage.py)"
    )
    assert changed == expected, f"{dotted}: changes {sorted(changed)}, READS says {sorted(expected)}"


def test_the_generator_settings_are_not_inputs_of_a_run_on_the_users_own_data():
    own = PipelineConfig.model_validate({"curate": {"sources": [{"path": "mine.jsonl"}]}})
    more = own.model_copy(update={"data": own.data.model_copy(update={"n_problems": 5})})
    assert fingerprint(curation_inputs(own, False)) == fingerprint(curation_inputs(more, False))
    generated = CONFIG.model_copy(update={"data": CONFIG.data.model_copy(update={"n_problems": 5})})
    assert fingerprint(curation_inputs(CONFIG, False)) != fingerprint(curation_inputs(generated, False))


def test_every_declaration_names_a_field_that_exists_and_says_why():
    names = {f[0] for f in FIELDS}
    sections = {".".join(f[0].split(".")[:i]) for f in FIELDS for i in range(1, f[0].count(".") + 1)}
    every = [*itertools.chain.from_iterable(READS.values()), *itertools.chain.from_iterable(EXCEPT.values())]
    for dotted in [*every, *NOT_RESULTS, *SWITCHES]:
        assert dotted in names or dotted in sections, f"flows/lineage.py names {dotted!r}, not a config field"
    assert all(len(why) > 15 for why in [*NOT_RESULTS.values(), *SWITCHES.values()])
    assert not set(NOT_RESULTS) & set(SWITCHES)


def test_a_file_a_thing_reads_is_an_input_by_content(tmp_path):
    source = tmp_path / "mine.jsonl"
    source.write_text('{"prompt": "1+1?", "reference": "2"}\n')
    config = PipelineConfig.model_validate({"curate": {"sources": [{"path": str(source)}]}})
    first = curation_inputs(config, False)
    source.write_text('{"prompt": "1+2?", "reference": "3"}\n')
    second = curation_inputs(config, False)
    assert fingerprint(first) != fingerprint(second)
    assert changes(first, second) == [f"{source} changed"]


def test_a_sources_mapping_is_an_input_named_where_it_changed(tmp_path):
    source = {"path": "mine.jsonl", "mapping": {"prompt": "question"}}
    config = PipelineConfig.model_validate({"curate": {"sources": [source]}})
    other = PipelineConfig.model_validate(
        {"curate": {"sources": [source | {"mapping": {"prompt": "question", "reference": "answer"}}]}}
    )
    assert changes(curation_inputs(config, False), curation_inputs(other, False)) == [
        "curate.sources[0].mapping.reference absent -> answer"
    ]


def test_reasons_name_each_changed_input_old_to_new():
    old = {
        "config": {"train.rl_lr": 0.0001, "train.seed": 0},
        "datasets": {"m1-curated": 1, "m1-code": 1},
        "files": {"a.jsonl": "x"},
        "start": "aaa",
        "stage": {"mixture": {"math": 0.6}},
        "release": "0.1.0",
    }
    new = {
        "config": {"train.rl_lr": 0.0002, "train.seed": 0},
        "datasets": {"m1-curated": 2, "m1-swe": 1},
        "files": {"a.jsonl": "y", "b.jsonl": "z"},
        "start": "bbb",
        "stage": {"mixture": {"math": 0.5, "code": 0.1}},
        "release": "0.2.0",
    }
    assert changes(old, new) == [
        "train.rl_lr 0.0001 -> 0.0002",
        "m1-code v1 -> absent",
        "m1-curated v1 -> v2",
        "m1-swe absent -> v1",
        "a.jsonl changed",
        "b.jsonl added",
        "m1-pipeline 0.1.0 -> 0.2.0",
        "stage mixture.code absent -> 0.1",
        "stage mixture.math 0.6 -> 0.5",
        "start checkpoint replaced",
    ]
    assert changes(old, old) == [] and changes(None, new) == ["not built yet"]


def test_a_prefix_covers_the_fields_under_it_not_longer_names():
    from flows.lineage import _under

    assert _under("train.seed", ("train.seed",)) and _under("train.length_bias.window", ("train",))
    assert not _under("train.seed_offset", ("train.seed",)) and not _under("evaluation", ("eval",))


def test_flatten_keeps_lists_whole():
    assert flatten({"a": {"b": [1, 2], "c": {}}, "d": 3}) == {"a.b": [1, 2], "a.c": {}, "d": 3}


def test_a_stage_reads_the_verifiers_of_the_domains_it_trains_only():
    """Scoring general items with another judge makes the stages that train general items stale, not the
    rule-verified ones before them (seen when the default curriculum moved to `genrm-grade`)."""
    config = PipelineConfig(name="t")
    tiny = load_curriculum("tiny")

    def fingerprints(verifiers: dict[str, str]) -> dict[str, str]:
        return {
            s.name: fingerprint(
                stage_inputs(
                    config, s.model_dump(), stage_train_config(config.train, s, tiny), verifiers, REFS, "x"
                )
            )
            for s in tiny.stages
        }

    before = fingerprints(tiny.verifiers)
    after = fingerprints(tiny.verifiers | {"general": "genrm-pair"})
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {s.name for s in tiny.stages if "general" in s.mixture} == {"general"}
    assert fingerprints(tiny.verifiers | {"math": "my-math"}) != before  # every stage trains math
