"""Code verifier: every verdict produced for real by programs run in the process sandbox."""

from __future__ import annotations

import json

import pytest

from verifiers.code import CodeVerifier, extract_code, outputs_match, values_match

SUM_TESTS = [{"input": "1 2\n", "output": "3\n"}, {"input": "5 7\n", "output": "12"}]


@pytest.fixture(scope="module")
def verifier(process_sandbox):
    return CodeVerifier(time_limit_s=1, memory_mb=256)  # generous wall time: the machine may be loaded


def py(code: str) -> str:
    return f"<think>I will write it.</think>Here is my solution:\n```python\n{code}\n```\nDone."


def cpp(code: str) -> str:
    return f"```cpp\n{code}\n```"


def judge(verifier, response: str, tests=SUM_TESTS, **extra):
    (reward,) = verifier.verify([{"response": response, "tests": tests, **extra}])
    return reward


@pytest.mark.parametrize(
    ("code", "verdict"),
    [
        ("a, b = map(int, input().split())\nprint(a + b)", "AC"),
        ("a, b = map(int, input().split())\nprint(a - b)", "WA"),
        ("while True:\n    pass", "TLE"),
        ("import time\ntime.sleep(30)", "TLE"),  # idle, not burning CPU: the wall limit catches it
        ("x = bytearray(1 << 30)\nprint(len(x))", "MLE"),
        ("raise SystemExit(3)", "RE"),
        ("import ctypes\nctypes.string_at(0)", "RE"),  # SIGSEGV
        ("print('y' * (1 << 22))", "OLE"),
        ("def broken(:\n    pass", "CE"),
    ],
)
def test_python_verdicts(verifier, code, verdict):
    reward = judge(verifier, py(code))
    assert reward.details["verdict"] == verdict, reward.details
    assert reward.reward == float(verdict == "AC")
    if verdict not in ("AC", "CE"):
        assert len(reward.details["tests"]) == 1  # stops at the first failing test


def test_cpp_verdicts(verifier):
    from sandboxes import get_sandbox

    if not get_sandbox("process").supports("cpp"):
        pytest.skip("no g++ in the sandbox")
    ok = '#include <cstdio>\nint main(){long long a,b;scanf("%lld %lld",&a,&b);printf("%lld\\n",a+b);}'
    assert judge(verifier, cpp(ok)).details["verdict"] == "AC"
    bad = judge(verifier, cpp("int main() { return undeclared; }"))
    assert bad.details["verdict"] == "CE" and "undeclared" in bad.details["compile_output"]
    crash = judge(verifier, cpp("#include <cstdlib>\nint main(){ abort(); }"))
    assert crash.details["verdict"] == "RE"


def test_partial_credit_runs_every_test(verifier):
    tests = [
        {"input": "1 2", "output": "3"},
        {"input": "2 2", "output": "5"},
        {"input": "0 0", "output": "0"},
    ]
    code = py("a, b = map(int, input().split())\nprint(a + b)")
    (strict,) = verifier.verify([{"response": code, "tests": tests}])
    (partial,) = CodeVerifier(partial_credit=True).verify([{"response": code, "tests": tests}])
    assert strict.reward == 0 and strict.details["passed"] == 1 and len(strict.details["tests"]) == 2
    assert partial.reward == pytest.approx(2 / 3) and [t["verdict"] for t in partial.details["tests"]] == [
        "AC",
        "WA",
        "AC",
    ]


def test_function_call_style(verifier):
    tests = [{"args": [[2, 7, 11, 15], 9], "expected": [0, 1]}, {"args": [[3, 3], 6], "expected": [0, 1]}]
    leetcode = (
        "class Solution:\n"
        "    def twoSum(self, nums, target):\n"
        "        print('debug output is fine')\n"
        "        seen = {}\n"
        "        for i, x in enumerate(nums):\n"
        "            if target - x in seen:\n"
        "                return (seen[target - x], i)\n"
        "            seen[x] = i\n"
    )
    assert judge(verifier, py(leetcode), tests, fn_name="twoSum").details["verdict"] == "AC"
    wrong = judge(verifier, py("def twoSum(nums, target):\n    return [1, 0]"), tests, fn_name="twoSum")
    assert wrong.details["verdict"] == "WA" and wrong.details["tests"][0]["expected"] == "[0, 1]"
    missing = judge(verifier, py("def other(): pass"), tests, fn_name="twoSum")
    assert missing.details["verdict"] == "RE"


def test_canonical_item_keeps_fn_name_and_limits_in_metadata(verifier):
    """As `{run}-code` stores them: tests, fn_name and per-test limits inside the metadata JSON."""
    tests = [{"args": [[3, 1, 2]], "kwargs": {}, "expected": [1, 2, 3]}, {"args": [[]], "expected": []}]
    meta = json.dumps({"tests": tests, "fn_name": "order", "time_limit_s": 0.2, "language": "python"})
    (ok,) = verifier.verify([{"response": py("def order(xs):\n    return sorted(xs)"), "metadata": meta}])
    assert ok.reward == 1.0 and ok.details["style"] == "function"
    patient = CodeVerifier(time_limit_s=5)  # the item's 0.2 s (wall 1.4 s) must win over these 5 s
    (slow,) = patient.verify([{"response": py("def order(xs):\n    while True: pass"), "metadata": meta}])
    assert slow.details["verdict"] == "TLE" and slow.details["tests"][0]["time_s"] < 3


def test_tests_from_metadata_and_bad_items(verifier):
    meta = json.dumps({"tests": SUM_TESTS})
    good = py("print(sum(map(int, input().split())))")
    (ok,) = verifier.verify([{"response": good, "metadata": meta}])
    assert ok.reward == 1.0
    rewards = verifier.verify(
        [
            {"response": good},
            {"response": good, "tests": "[oops"},
            {"response": 3, "tests": SUM_TESTS},
            {"response": "```java\nclass A {}\n```", "tests": SUM_TESTS, "language": "python"},
            {"response": py("def f(): pass"), "tests": SUM_TESTS, "fn_name": "f", "language": "cpp"},
            {"response": "```java\nclass A {}\n```", "tests": SUM_TESTS},
        ]
    )
    assert all(r.reward == 0 and "error" in r.details for r in rewards), [r.details for r in rewards]
    assert "unsupported language 'java'" in rewards[-1].details["error"]


def test_extract_code_prefers_the_last_block_of_the_language():
    response = "<think>```python\nprint(0)\n```</think>```py\nprint(1)\n```\n```cpp\nint main(){}\n```"
    assert extract_code(response, None) == ("int main(){}\n", "cpp")
    assert extract_code(response, "python") == ("print(1)\n", "python")
    assert extract_code("print(2)", None) == ("print(2)", "python")


def test_output_and_value_comparison():
    assert outputs_match("3\n", "3") and outputs_match("1  2\n3", "1 2 3")
    assert outputs_match("0.3333333", "0.333333333") and not outputs_match("0.33", "0.333333")
    assert not outputs_match("1 2", "1 2 3") and not outputs_match("nan", "0")  # NaN is close to nothing
    assert values_match((1, [2.0000000001]), [1, [2]]) and not values_match([1], [1, 2])
    assert not values_match(1, True) and values_match({"a": [1]}, {"a": [1]})


@pytest.mark.docker
def test_docker_backend_gives_the_same_verdicts(docker_sandbox):
    docker = CodeVerifier(backend="docker", time_limit_s=1, memory_mb=128, workers=3)
    rewards = docker.verify(
        [
            {"response": py("a, b = map(int, input().split())\nprint(a + b)"), "tests": SUM_TESTS},
            {"response": py("while True:\n    pass"), "tests": SUM_TESTS},
            {"response": py("x = bytearray(1 << 30)\nprint(len(x))"), "tests": SUM_TESTS},
        ]
    )
    assert [r.details["verdict"] for r in rewards] == ["AC", "TLE", "MLE"]


def test_format_reward(verifier):
    code = "print(sum(map(int, input().split())))"
    weighted = CodeVerifier(time_limit_s=1, format_weight=0.5)
    fenced, bare, bad_think = weighted.verify(
        [
            {"response": py(code), "tests": SUM_TESTS},
            {"response": code, "tests": SUM_TESTS},  # correct, but not in a code block
            {"response": "<think>a<think>b</think>" + py(code), "tests": SUM_TESTS},
        ]
    )
    assert fenced.reward == 1.5 and fenced.details["format_ok"] is True
    assert bare.reward == 1.0 and "code block" in bare.details["format"]
    assert bad_think.reward == 1.0 and "unbalanced" in bad_think.details["format"]
    assert judge(verifier, py(code)).reward == 1.0  # format weight 0 by default: pure correctness
