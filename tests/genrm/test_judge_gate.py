"""The gate: a run trains on its judge only when the judge beats every trivial judge on the balanced
measures (verifiers/genrm/balanced.py). Judges that read nothing (always the reference, always the first
shown, the longer text, a random verdict, a constant grade) are refused on real evaluations through a
loopback endpoint; a judge that reads the key facts is accepted; and the curriculum a run with a refused
judge trains (the general stage off, the reason in the notes)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

import pytest

from flows.config import PipelineConfig
from flows.curriculum.plan import active_curriculum, general_gate
from flows.genrm.flow import judge_dir, judge_gate
from flows.genrm.labels import rule_grade
from tests.genrm.scripted import blocks, prefers_longer, scripted_judge
from verifiers.genrm.balanced import balanced_pairs
from verifiers.genrm.evaluate import JudgeEval, evaluate_judge
from verifiers.genrm.prompts import defuse


@pytest.fixture(scope="module")
def labelled():
    from flows.genrm.labels import labelled_set

    labs = labelled_set(0, 0, 16, seed=11)  # 16 general prompts, 8 responses each
    return labs, [x.as_row() for x in labs]


def _keys(labs):
    """What a judge that reads the key facts knows: each question's item (its key and instructions)."""
    return {x.question: x.item for x in labs}


def key_reader(labs):
    items = _keys(labs)

    def reply(message: str) -> str:
        b = blocks(message)
        item = items[b["question"]]
        if "response_a" not in b:
            return f"Grade: {rule_grade(item, b['response'])}"
        a, c = rule_grade(item, b["response_a"]), rule_grade(item, b["response_b"])
        return "Verdict: [[A]]" if a > c else "Verdict: [[B]]" if c > a else "Verdict: [[C]]"

    return reply


def with_pairwise(labs, pairwise):
    """A judge whose grades read the key facts and whose pairwise verdict is ``pairwise(message)``."""
    honest = key_reader(labs)
    return lambda m: honest(m) if "response_a" not in blocks(m) else pairwise(m)


def always_the_reference(rows):
    """A judge that knows which text of each pair is in the reference's role, and always prefers it."""
    verdict = {}
    for p in balanced_pairs(rows, seed=0):  # keyed as the judge sees the texts: tags defused
        q, r, f = defuse(p.question), defuse(p.response), defuse(p.reference)
        verdict[(q, r, f)], verdict[(q, f, r)] = "B", "A"

    def reply(message: str) -> str:
        b = blocks(message)
        return f"Verdict: [[{verdict[(b['question'], b['response_a'], b['response_b'])]}]]"

    return reply


def random_verdict(message: str) -> str:
    """A verdict drawn at random, reproducibly: from a hash of the prompt."""
    return f"Verdict: [[{'ABC'[hashlib.sha256(message.encode()).digest()[0] % 3]}]]"


def evaluate(policy, rows) -> JudgeEval:
    with scripted_judge(policy) as (url, _):
        return evaluate_judge(url, rows, ns=(1, 8), draws=4)


@pytest.mark.parametrize("name", ["always the reference", "always the first shown", "longer", "random"])
def test_a_judge_that_reads_nothing_is_refused(labelled, name):
    labs, rows = labelled
    pairwise = {
        "always the reference": always_the_reference(rows),
        "always the first shown": lambda m: "Verdict: [[A]]",
        "longer": prefers_longer,
        "random": random_verdict,
    }[name]
    result = evaluate(with_pairwise(labs, pairwise), rows)
    p = result.pairwise
    assert p["n"] >= 90 and p["best_trivial_accuracy"] == pytest.approx(1 / 3)
    assert abs(p["balanced_accuracy"] - 1 / 3) < 0.1, p  # at chance on the balanced set
    gate = result.gate(0.10)
    assert gate is not None and gate.startswith("pairwise balanced accuracy"), gate
    assert "grade" not in gate  # its grades read the key facts: only its pairwise verdicts are refused


def test_a_judge_that_reads_the_key_facts_is_accepted(labelled):
    labs, rows = labelled
    result = evaluate(key_reader(labs), rows)
    assert result.pairwise["balanced_accuracy"] == 1.0 and result.pairwise["position_consistency"] == 1.0
    assert result.accuracy == 1.0 and result.balanced_accuracy == 1.0
    assert result.gate(0.10) is None


def test_a_constant_grade_is_refused_whatever_its_pairwise_verdicts(labelled):
    labs, rows = labelled
    honest = key_reader(labs)
    result = evaluate(lambda m: "Grade: 4" if "response_a" not in blocks(m) else honest(m), rows)
    assert result.balanced_accuracy == pytest.approx(1 / len(result.confusion))
    assert result.gate(0.10).startswith("grade balanced accuracy")


def judge_eval(
    grades: float,
    pairwise: float | None,
    low: float | None = None,
    general: tuple[float, float] | None = None,
) -> JudgeEval:
    pair = None
    if pairwise is not None:
        pair = {
            "n": 144,
            "balanced_accuracy": pairwise,
            "balanced_low": pairwise - 0.08 if low is None else low,
            "balanced_high": pairwise + 0.08,
            "best_trivial": "always the reference",
            "best_trivial_accuracy": 1 / 3,
        }
    return JudgeEval(
        n=100,
        accuracy=0.5,
        majority_baseline=0.9,  # a skewed label mix: the gate does not read plain accuracy
        spearman=0.3,
        failed=0,
        confusion={1: {}, 2: {}, 4: {}, 5: {}},
        best_of_n=[],
        pairwise=pair,
        balanced_accuracy=grades,
        grade_by_domain={}
        if general is None
        else {
            "general": {
                "n": 96,
                "accuracy": 0.5,
                "majority": 0.4,
                "balanced": general[0],
                "low": general[1],
                "high": general[0] + 0.1,
                "constant": 0.25,
            }
        },
    )


def test_the_gate_arithmetic():
    assert judge_eval(0.6, 0.6).gate(0.10) is None
    assert judge_eval(0.6, 0.43).gate(0.10).startswith("pairwise balanced accuracy 0.43")
    assert judge_eval(0.6, 0.6, low=0.33).gate(0.10) is not None  # its interval reaches the baseline
    assert judge_eval(0.34, 0.6).gate(0.10) == "grade balanced accuracy 0.34 < a constant grade's 0.25 + 0.10"
    assert judge_eval(0.6, 0.3).gate(0.0) is not None and judge_eval(0.6, 0.45).gate(0.0) is None
    assert judge_eval(0.6, None).gate(0.10) is None  # no pairwise judgments: the grades alone


def test_the_gate_reads_the_measures_of_the_judge_the_curriculum_uses():
    refused_pairs = judge_eval(0.6, 0.40)
    assert refused_pairs.gate(0.10, "grade") is None  # the five-grade judge is fit
    assert refused_pairs.gate(0.10, "pair").startswith("pairwise balanced accuracy 0.40")
    assert refused_pairs.gate(0.10, "both") == refused_pairs.gate(0.10, "pair")
    assert refused_pairs.verdicts(0.10) == {
        "genrm-grade": None,
        "genrm-pair": refused_pairs.gate(0.10, "pair"),
    }
    # with per-domain measures the grade gate reads the general items' grades and their interval
    assert judge_eval(0.3, 0.40, general=(0.6, 0.5)).gate(0.10, "grade") is None
    assert judge_eval(0.9, 0.40, general=(0.3, 0.2)).gate(0.10, "grade") == (
        "grade balanced accuracy on general 0.30 (95% interval 0.20-0.40) not 0.10 above a constant grade's "
        "0.25 (96 responses)"
    )
    assert judge_eval(0.9, 0.6, general=(0.4, 0.24)).gate(0.10, "grade") is not None  # interval reaches 0.25
    with pytest.raises(ValueError):
        refused_pairs.gate(0.10, "genrm-grade")


def _write_judge(config: PipelineConfig, result: JudgeEval) -> None:
    folder = judge_dir(config)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "training.json").write_text(json.dumps({"judge": {"eval": asdict(result)}}))


@pytest.fixture
def config(tmp_path, monkeypatch):
    monkeypatch.delenv("M1_GENRM_URL", raising=False)
    return PipelineConfig(name="gate", home=str(tmp_path / "home"))


def test_a_run_with_a_refused_judge_does_not_train_on_general_tasks(config):
    assert judge_gate(config) is None  # no judge yet (preflight): the plan keeps the general stage
    planned, _ = active_curriculum(config)
    assert "general" in [s.name for s in planned.stages]

    _write_judge(config, judge_eval(0.3, 0.6))  # the default curriculum scores general with genrm-grade
    gate = judge_gate(config, "genrm-grade")
    assert gate.startswith("grade balanced accuracy 0.30")
    curriculum, notes = active_curriculum(config)
    assert "general" not in [s.name for s in curriculum.stages]
    assert all("general" not in s.mixture for s in curriculum.stages)
    assert "{run}-general" in curriculum.datasets  # the base's warm start and held-out evaluation read it
    assert notes[0] == f"general tasks: not trained on, the run's judge fails its gate ({gate})"


def _curriculum(tmp_path, general: str) -> str:
    """tiny.toml with its general domain scored by ``general``."""
    from flows.curriculum import curriculum_path

    text = curriculum_path("tiny").read_text()
    path = tmp_path / f"tiny-{general}.toml"
    path.write_text(text.replace('general = "genrm-grade"', f'general = "{general}"'))
    assert f'general = "{general}"' in path.read_text()
    return str(path)


@pytest.mark.parametrize("verifier", ["genrm", "genrm-pair", "genrm-grade", "general-rule"])
def test_a_grade_judge_with_a_refused_pairwise_judge_trains_only_a_grade_curriculum(
    config, tmp_path, verifier
):
    cfg = config.model_copy(
        update={"train": config.train.model_copy(update={"curriculum": _curriculum(tmp_path, verifier)})}
    )
    _write_judge(cfg, judge_eval(0.6, 0.40, general=(0.7, 0.6)))
    stages = [s.name for s in active_curriculum(cfg)[0].stages]
    if verifier == "general-rule":  # a rule scores the general items: no judge to gate
        assert general_gate(cfg) is None and "general" in stages
    elif verifier == "genrm-grade":
        assert judge_gate(cfg, verifier) is None and "general" in stages
    else:
        assert judge_gate(cfg, verifier).startswith("pairwise balanced accuracy 0.40")
        assert "general" not in stages


def test_a_good_judge_is_trained_on_and_the_margin_is_the_configs(config):
    _write_judge(config, judge_eval(0.6, 0.6))
    assert "general" in [s.name for s in active_curriculum(config)[0].stages]
    strict = config.model_copy(update={"genrm": config.genrm.model_copy(update={"gate_margin": 0.3})})
    assert judge_gate(strict) is not None


def test_a_users_judge_is_gated_on_its_own_measurement(config, monkeypatch):
    from flows.genrm.files import genrm_root
    from flows.genrm.flow import EXTERNAL_EVAL

    _write_judge(config, judge_eval(0.6, 0.6))  # the run's own judge would pass
    monkeypatch.setenv("M1_GENRM_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("M1_GENRM_MODEL", "theirs")
    assert judge_gate(config) is None  # not measured yet
    path = genrm_root(config) / EXTERNAL_EVAL
    saved = {"url": "http://127.0.0.1:1/v1", "model": "theirs", "eval": asdict(judge_eval(0.3, 0.38))}
    path.write_text(json.dumps(saved))
    assert judge_gate(config, "genrm").startswith("pairwise balanced accuracy 0.38")
    assert judge_gate(config, "genrm-grade").startswith("grade balanced accuracy 0.30")
    monkeypatch.setenv("M1_GENRM_URL", "http://127.0.0.1:2/v1")  # another judge: not this measurement
    assert judge_gate(config) is None


def test_the_runs_own_judge_is_gated_while_it_is_served(config, monkeypatch):
    """`m1 run` serves its judge for the evaluations and stages (M1_GENRM_URL set by served_judge): that
    URL is still the run's own judge, so the gate holds there as in the plan made before serving it."""
    from flows.genrm.files import SERVED_JUDGE_ENV

    _write_judge(config, judge_eval(0.6, 0.40))
    monkeypatch.setenv("M1_GENRM_URL", "http://127.0.0.1:1/v1")
    monkeypatch.setenv(SERVED_JUDGE_ENV, str(judge_dir(config).resolve()))
    assert judge_gate(config).startswith("pairwise balanced accuracy 0.40")
    monkeypatch.setenv(SERVED_JUDGE_ENV, "/somewhere/else")  # another run's judge, unmeasured here
    assert judge_gate(config) is None


def test_the_gate_can_be_switched_off(config):
    _write_judge(config, judge_eval(0.6, 0.40))
    off = config.model_copy(update={"genrm": config.genrm.model_copy(update={"gate": False})})
    assert judge_gate(off) is None
    assert "general" in [s.name for s in active_curriculum(off)[0].stages]
