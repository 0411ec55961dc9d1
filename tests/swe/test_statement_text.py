"""The SWE task's problem statement from recorded pytest output (flows/swe/synthesize.py): reasons split at
the first " - ", memory addresses masked, long failure lists cut, the closing instruction, and the issue
rewrite's request to the endpoint."""

from __future__ import annotations

from flows.swe.synthesize import failure_messages, first_failure, rewrite, statement

OUTPUT = """\
=================================== FAILURES ===================================
___________________________________ test_a ____________________________________
E   AssertionError: <Thing object at 0x7f3a2b1c9d00> != 3
E   assert 1 - 2 == 3
___________________________________ test_b ____________________________________
E   KeyError: 'b'
=========================== short test summary info ============================
FAILED tests/test_x.py::test_a - AssertionError: 1 - 2 == 3 at 0xdeadbeef
ERROR tests/test_x.py::test_b - KeyError: 'b'
"""


def test_a_reason_is_everything_after_the_first_dash_with_addresses_masked():
    assert failure_messages(OUTPUT) == {
        "tests/test_x.py::test_a": "AssertionError: 1 - 2 == 3 at 0x…",
        "tests/test_x.py::test_b": "KeyError: 'b'",
    }


def test_the_first_failure_is_its_e_lines_with_addresses_masked():
    assert first_failure(OUTPUT) == [
        "E   AssertionError: <Thing object at 0x…> != 3",
        "E   assert 1 - 2 == 3",
    ]


def test_a_statement_lists_ten_failing_tests_then_says_how_many_more():
    f2p = [f"tests/test_x.py::test_{i}" for i in range(12)]
    text = statement("toolz", f2p, "")
    assert "`tests/test_x.py::test_9`" in text and "test_10`" not in text
    assert "\n- ... and 2 more\n" in text
    assert text.endswith("\n\nFix the library so that these tests pass again, without changing the tests.")
    assert "and 0 more" not in statement("toolz", f2p[:10], "")


class _Endpoint:
    def __init__(self, reply):
        self.reply, self.calls = reply, []

    def chat(self, messages, **kwargs):
        self.calls.append((messages, kwargs))
        return [[self.reply]]


def test_the_rewrite_asks_for_a_short_issue_and_keeps_the_statement_when_the_reply_is_empty():
    endpoint = _Endpoint("  An issue.  ")
    assert rewrite(endpoint, "toolz", "report") == "An issue."
    ((messages, kwargs),) = endpoint.calls
    assert kwargs == {"max_tokens": 700, "temperature": 0.2}
    assert "the Python library toolz" in messages[0] and messages[0].endswith("report")
    assert rewrite(_Endpoint("   "), "toolz", "report") == "report"
