"""The pass-rate filter's contract, with an in-process scripted policy and verifier plugins.

k samples per item, "solved" read from the verifier's `correct` verdict (else a full reward), the
exclusive/inclusive bounds (kept: low < rate < high), the reasons and summary word for word, the `rates`
evidence frame, and which verifier scores which row.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence

import polars as pl
import pytest

from flows.curate.passrate import passrate_filter
from flows.errors import InputError
from tests.curate.helpers import removed_reasons

# Verifier plugins loaded from a plugin directory, as a user's own verifiers are.
PLUGIN = textwrap.dedent(
    '''
    from verifiers.base import Reward


    class Scripted:
        """The response says its own score: "r=<reward>" and optionally "c=<correct verdict>"."""

        name = "scripted"
        version = "1"

        def verify(self, items):
            out = []
            for item in items:
                fields = dict(part.split("=", 1) for part in item["response"].split())
                details = {"correct": eval(fields["c"])} if "c" in fields else {}
                out.append(Reward(float(fields["r"]), details))
            return out


    class Always:
        name = "always"
        version = "1"

        def verify(self, items):
            return [Reward(1.0, {"correct": True}) for _ in items]


    class Never:
        name = "never"
        version = "1"

        def verify(self, items):
            return [Reward(0.0, {"correct": False}) for _ in items]


    class SeesRow:
        """Correct when the response is "<task>:<reference>" of the row being scored."""

        name = "sees-row"
        version = "1"

        def verify(self, items):
            return [
                Reward(1.0, {"correct": item["response"] == f"{item['task']}:{item['reference']}"})
                for item in items
            ]


    VERIFIERS = {"scripted": Scripted, "always": Always, "never": Never, "sees-row": SeesRow}
    '''
)


@pytest.fixture
def plugins(tmp_path) -> list[str]:
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "scripted_verifiers.py").write_text(PLUGIN)
    return [str(tmp_path / "plugins")]


class ScriptedSampler:
    """A deterministic policy: respond(prompt, i) is the i-th of the k samples; every call is recorded."""

    name = "scripted-policy"

    def __init__(self, respond: Callable[[str, int], str]):
        self.respond = respond
        self.calls: list[tuple[list[str], int]] = []

    def sample(self, prompts: Sequence[str], k: int) -> list[list[str]]:
        self.calls.append((list(prompts), k))
        return [[self.respond(p, i) for i in range(k)] for p in prompts]


def solved_first(counts: dict[str, int], right: Callable[[str], str], wrong: str = "wrong"):
    """Responses that are right for the first counts[prompt] samples, wrong after."""
    return lambda p, i: right(p) if i < counts[p] else wrong


def test_defaults_use_8_samples_the_math_verifier_and_bounds_0_and_0_9():
    df = pl.DataFrame(
        {
            "id": ["never", "once", "seven", "always"],
            "prompt": ["p0", "p1", "p7", "p8"],
            "answer": ["3", "\\frac{1}{2}", "10", "4"],
        }
    )
    gold = dict(zip(df["prompt"], df["answer"], strict=True))
    counts = {"p0": 0, "p1": 1, "p7": 7, "p8": 8}
    sampler = ScriptedSampler(
        solved_first(counts, lambda p: f"So the result is \\boxed{{{gold[p]}}}.", "\\boxed{99}")
    )
    res = passrate_filter(df, sampler)
    assert sampler.calls == [(["p0", "p1", "p7", "p8"], 8)]
    assert res.kept["id"].to_list() == ["once", "seven"]
    assert res.kept["pass_rate"].to_list() == [0.125, 0.875]
    assert removed_reasons(res) == {
        "never": "too hard: pass rate 0.0 <= 0.0 (8 samples)",
        "always": "too easy: pass rate 1.0 >= 0.9 (8 samples)",
    }
    assert res.count.step == "pass-rate"
    assert (res.count.rows_in, res.count.rows_out) == (4, 2)
    assert res.count.reason == "pass rate outside (0.0, 0.9) over 8 samples from scripted-policy"


def test_bounds_are_exclusive_for_keeping_and_reasons_round_to_3_places(plugins):
    df = pl.DataFrame(
        {
            "id": ["a", "b", "c", "d", "e"],
            "prompt": ["0", "1", "2", "3", "4"],
            "answer": ["x"] * 5,
        }
    )
    sampler = ScriptedSampler(lambda p, i: "r=1.0" if i < int(p) else "r=0.0")
    res = passrate_filter(df, sampler, k=4, low=0.25, high=0.75, verifier="scripted", plugin_dirs=plugins)
    assert res.kept["id"].to_list() == ["c"]
    assert removed_reasons(res) == {
        "a": "too hard: pass rate 0.0 <= 0.25 (4 samples)",
        "b": "too hard: pass rate 0.25 <= 0.25 (4 samples)",
        "d": "too easy: pass rate 0.75 >= 0.75 (4 samples)",
        "e": "too easy: pass rate 1.0 >= 0.75 (4 samples)",
    }
    assert res.count.reason == "pass rate outside (0.25, 0.75) over 4 samples from scripted-policy"

    res3 = passrate_filter(
        df.head(3), sampler, k=3, low=0.4, high=0.6, verifier="scripted", plugin_dirs=plugins
    )
    assert removed_reasons(res3)["b"] == "too hard: pass rate 0.333 <= 0.4 (3 samples)"
    assert removed_reasons(res3)["c"] == "too easy: pass rate 0.667 >= 0.6 (3 samples)"
    assert res3.rates["pass_rate"].to_list() == [0.0, 1 / 3, 2 / 3]  # unrounded in the evidence


def test_rates_frame_holds_every_item_with_its_counts(plugins):
    df = pl.DataFrame({"qid": ["q1", "q2", "q3"], "question": ["2", "5", "0"], "gold": ["g"] * 3})
    sampler = ScriptedSampler(lambda p, i: "r=1.0" if i < int(p) else "r=0.0")
    res = passrate_filter(
        df,
        sampler,
        k=5,
        verifier="scripted",
        prompt_column="question",
        answer_column="gold",
        id_column="qid",
        plugin_dirs=plugins,
    )
    assert sampler.calls == [(["2", "5", "0"], 5)]
    assert res.rates.schema == pl.Schema(
        {"id": pl.String, "pass_rate": pl.Float64, "correct": pl.Int64, "samples": pl.Int64}
    )
    assert res.rates.rows() == [("q1", 0.4, 2, 5), ("q2", 1.0, 5, 5), ("q3", 0.0, 0, 5)]
    assert res.kept.columns == ["qid", "question", "gold", "pass_rate"]
    assert res.kept["qid"].to_list() == ["q1"]


@pytest.mark.parametrize(
    "response,solved",
    [
        ("r=1.0", True),  # no verdict: a full reward is a solve
        ("r=0.99", False),  # no verdict: anything less is not
        ("r=1.5", True),
        ("r=0.9 c=True", True),  # a correct answer that lost its format bonus is still a solve
        ("r=1.0 c=False", False),  # a full reward from format alone is not
        ("r=1.0 c=1", False),  # only a verdict of True counts
        ("r=1.0 c=None", False),
    ],
)
def test_solved_means_the_correct_verdict_else_a_full_reward(plugins, response, solved):
    df = pl.DataFrame({"id": ["a"], "prompt": ["p"], "answer": ["x"]})
    res = passrate_filter(
        df,
        ScriptedSampler(lambda p, i: response),
        k=2,
        low=-1.0,
        high=2.0,
        verifier="scripted",
        plugin_dirs=plugins,
    )
    assert res.rates["correct"].to_list() == [2 if solved else 0]
    assert res.kept["pass_rate"].to_list() == [1.0 if solved else 0.0]


def test_each_domain_in_verifiers_gets_its_own_verifier_the_rest_the_default(plugins):
    df = pl.DataFrame(
        {
            "id": ["c", "m", "none", "g"],
            "domain": ["code", "math", None, "general"],
            "prompt": ["p"] * 4,
            "answer": ["1"] * 4,
        }
    )
    sampler = ScriptedSampler(lambda p, i: "anything")
    res = passrate_filter(
        df,
        sampler,
        k=2,
        low=-1.0,
        high=2.0,
        verifier="never",
        verifiers={"code": "always", "general": "always"},
        plugin_dirs=plugins,
    )
    assert res.rates["correct"].to_list() == [2, 0, 0, 2]
    # routing does not rewrite the rows' own domain
    assert res.kept["domain"].to_list() == ["code", "math", None, "general"]

    # without a verifiers table every row, whatever its domain, goes to `verifier`
    res = passrate_filter(df, sampler, k=2, low=-1.0, high=2.0, verifier="always", plugin_dirs=plugins)
    assert res.rates["correct"].to_list() == [2, 2, 2, 2]


def test_the_verifier_sees_the_whole_row_with_the_answer_as_reference(plugins):
    df = pl.DataFrame(
        {
            "id": ["a", "b"],
            "task": ["arith", "algebra"],
            "prompt": ["pa", "pb"],
            "reference": ["full solution a", "full solution b"],
            "answer": ["1", "2"],
            "gold": ["G1", "G2"],
        }
    )
    task = dict(zip(df["prompt"], df["task"], strict=True))

    def run(column_values: dict[str, str], **kwargs):
        sampler = ScriptedSampler(lambda p, i: f"{task[p]}:{column_values[p]}")
        return (
            passrate_filter(
                df, sampler, k=2, low=-1.0, high=2.0, verifier="sees-row", plugin_dirs=plugins, **kwargs
            )
            .rates["correct"]
            .to_list()
        )

    # `answer` (from extract_answers) when present...
    assert run({"pa": "1", "pb": "2"}) == [2, 2]
    assert run({"pa": "full solution a", "pb": "full solution b"}) == [0, 0]
    # ...an explicit answer_column over it...
    assert run({"pa": "G1", "pb": "G2"}, answer_column="gold") == [2, 2]
    # ...and `reference` itself when there is no `answer` column
    sampler = ScriptedSampler(lambda p, i: f"{task[p]}:full solution {p[1]}")
    res = passrate_filter(
        df.drop("answer"), sampler, k=2, low=-1.0, high=2.0, verifier="sees-row", plugin_dirs=plugins
    )
    assert res.rates["correct"].to_list() == [2, 2]


def test_an_unknown_verifier_is_an_error_naming_it(plugins):
    df = pl.DataFrame({"id": ["a"], "prompt": ["p"], "answer": ["1"]})
    with pytest.raises(InputError, match="unknown verifier 'scripted'"):
        passrate_filter(df, ScriptedSampler(lambda p, i: "r=1.0"), k=1, verifier="scripted")


def test_missing_columns_are_named():
    df = pl.DataFrame({"id": ["a"], "answer": ["1"]})
    with pytest.raises(InputError, match=r"^passrate input: missing column\(s\) prompt \(has: id, answer\)$"):
        passrate_filter(df, ScriptedSampler(lambda p, i: "x"), k=1)
    with pytest.raises(
        InputError, match=r"^passrate input: missing column\(s\) reference \(has: id, prompt\)$"
    ):
        passrate_filter(pl.DataFrame({"id": ["a"], "prompt": ["p"]}), ScriptedSampler(lambda p, i: "x"), k=1)


def test_an_empty_frame_asks_the_policy_nothing(plugins):
    df = pl.DataFrame(schema={"id": pl.String, "prompt": pl.String, "answer": pl.String})
    sampler = ScriptedSampler(lambda p, i: "r=1.0")
    res = passrate_filter(df, sampler, k=4, verifier="scripted", plugin_dirs=plugins)
    assert sampler.calls == []
    assert res.kept.schema["pass_rate"] == pl.Float64 and res.kept.height == 0
    assert res.rates.height == 0
    assert res.rates.schema == pl.Schema(
        {"id": pl.String, "pass_rate": pl.Float64, "correct": pl.Int64, "samples": pl.Int64}
    )
    assert (res.count.rows_in, res.count.rows_out) == (0, 0)


def test_a_policy_that_answers_the_wrong_number_of_prompts_is_an_error(plugins):
    class Short(ScriptedSampler):
        def sample(self, prompts, k):
            return super().sample(prompts, k)[:-1]

    df = pl.DataFrame({"id": ["a", "b"], "prompt": ["p", "q"], "answer": ["1", "2"]})
    with pytest.raises(ValueError, match="zip"):
        passrate_filter(df, Short(lambda p, i: "r=1.0"), k=2, verifier="scripted", plugin_dirs=plugins)
