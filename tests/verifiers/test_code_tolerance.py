"""Numeric outputs compare within an absolute tolerance below 1 (relative above 1): 0.1 + 0.2 is 0.3,
0.31 is not. A tolerance truncated to an integer would make the first a wrong answer."""

from __future__ import annotations

import pytest

from verifiers.code import CodeVerifier, outputs_match, values_match


@pytest.mark.parametrize(
    ("got", "want", "tolerance", "match"),
    [
        (repr(0.1 + 0.2), "0.3", 1e-6, True),
        ("0.31", "0.3", 1e-6, False),
        ("1e-7", "0", 1e-6, True),
        ("2e-6", "0", 1e-6, False),
        ("0.3000001", "0.3", 1e-9, False),
        ("0.3000001", "0.3", 1e-6, True),
        ("1000000.5", "1000000", 1e-6, True),  # relative above 1: 0.5 <= 1e-6 * 1e6
        ("1000002", "1000000", 1e-6, False),
    ],
)
def test_outputs_match_with_a_fractional_tolerance(got, want, tolerance, match):
    assert outputs_match(got, want, tolerance) is match
    assert values_match(float(got), float(want), tolerance) is match


@pytest.fixture(scope="module")
def verifier(process_sandbox):
    return CodeVerifier(time_limit_s=2, tolerance=1e-6, workers=1)


@pytest.mark.parametrize(("expression", "verdict"), [("0.1 + 0.2", "AC"), ("0.31", "WA")])
def test_code_verifier_applies_the_tolerance(verifier, expression, verdict):
    stdio = {"response": f"```python\nprint({expression})\n```", "tests": [{"input": "", "output": "0.3"}]}
    function = {
        "response": f"```python\ndef f():\n    return {expression}\n```",
        "fn_name": "f",
        "tests": [{"args": [], "expected": 0.3}],
    }
    for reward in verifier.verify([stdio, function]):
        assert reward.details["verdict"] == verdict, reward.details
