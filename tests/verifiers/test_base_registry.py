"""The reward contract in verifiers/base.py: `item_field` lookups, `verify_safely` isolating bad items
and bad rewards, and the plugin registry (runtime registration, entry points loaded once, plugin
directories with their load errors, and the messages a user sees for an unknown or broken name)."""

from __future__ import annotations

import inspect
import math
import uuid
from importlib.metadata import EntryPoint

import pytest

from verifiers.base import (
    ENTRY_POINT_GROUP,
    ItemError,
    PluginInfo,
    Registry,
    Reward,
    item_field,
    verify_safely,
)

# --- item_field ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("item", "decode", "value"),
    [
        ({"k": 1}, True, 1),
        ({"k": 0, "metadata": '{"k": 9}'}, True, 0),  # a falsy top-level value still wins
        ({"k": "[1, 2]"}, True, [1, 2]),
        ({"k": "plain"}, False, "plain"),
        ({"metadata": '{"k": "[3]"}'}, True, [3]),  # found in metadata, then decoded itself
        ({"metadata": {"k": 5}}, True, 5),  # metadata already parsed (not a JSON string)
        ({"metadata": "[1, 2]"}, True, None),  # metadata JSON that is not an object has no keys
        ({"metadata": '{"other": 1}'}, True, None),
        ({"k": None, "metadata": None}, True, None),
    ],
)
def test_item_field_reads_top_level_then_metadata(item, decode, value):
    assert item_field(item, "k", decode=decode) == value


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"metadata": "{oops"}, "`metadata` is not valid JSON"),
        ({"k": "{oops"}, "`k` is a string but not valid JSON"),
    ],
)
def test_item_field_malformed_json_is_an_item_error(item, message):
    with pytest.raises(ItemError) as raised:
        item_field(item, "k")
    assert str(raised.value) == message


def test_reward_error_is_zero_with_the_message_and_extra_details():
    assert Reward.error("bad", line=3) == Reward(0.0, {"error": "bad", "line": 3})


# --- verify_safely -------------------------------------------------------------------------------


class Picky:
    """Fails the whole batch when any item asks it to; otherwise echoes the item's `n`."""

    name, version = "picky", "1"

    def verify(self, items):
        if any(item.get("explode") for item in items):
            raise RuntimeError("boom")
        return [Reward(1.0, {"n": item["n"]}) for item in items]


class Short:
    """Returns one reward for any batch: a plugin bug that only the item-by-item retry can fix."""

    name, version = "short", "1"

    def verify(self, items):
        return [Reward(1.0, {"n": items[0]["n"]})]


BOOM = Reward(0.0, {"error": "RuntimeError: boom"})


@pytest.mark.parametrize(
    ("verifier", "items", "rewards"),
    [
        (Picky(), [{"n": 1}, {"n": 2}], [Reward(1.0, {"n": 1}), Reward(1.0, {"n": 2})]),
        (Picky(), [{"explode": True}], [BOOM]),
        (Picky(), [{"n": 1}, {"explode": True}], [Reward(1.0, {"n": 1}), BOOM]),
        (
            Picky(),
            [{"explode": True}, {"n": 2}, {"n": 3}],
            [BOOM, Reward(1.0, {"n": 2}), Reward(1.0, {"n": 3})],
        ),
        (Short(), [{"n": 1}, {"n": 2}], [Reward(1.0, {"n": 1}), Reward(1.0, {"n": 2})]),
    ],
)
def test_verify_safely_retries_a_failed_batch_item_by_item(verifier, items, rewards):
    assert verify_safely(verifier, items) == rewards


class Returns:
    """Returns whatever it was built with, for one item."""

    name, version = "returns", "1"

    def __init__(self, value):
        self.value = value

    def verify(self, items):
        return [self.value]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("not a reward", Reward.error("verifier returned str, not a Reward")),
        (Reward(math.inf), Reward.error("verifier returned a non-finite or non-numeric reward: inf")),
        (Reward("1"), Reward.error("verifier returned a non-finite or non-numeric reward: '1'")),
        (Reward(1.0, ["x"]), Reward.error("verifier returned details that are not a dict")),
        (Reward(1, {"a": 1}), Reward(1.0, {"a": 1})),
    ],
)
def test_verify_safely_replaces_malformed_rewards(value, expected):
    (reward,) = verify_safely(Returns(value), [{}])
    assert reward == expected and type(reward.reward) is float


# --- registry ------------------------------------------------------------------------------------


class Echo:
    name, version = "echo", "3.1"

    def __init__(self, bonus=0.0):
        self.bonus = bonus

    def verify(self, items):
        return [Reward(self.bonus) for _ in items]


class EchoFactory:
    """A callable instance: it has a module but no __qualname__."""

    def __call__(self, **options):
        return Echo(**options)


def test_register_a_factory_at_runtime():
    reg = Registry()
    reg.register("echo", Echo)
    factory = EchoFactory()
    reg.register("echo-made", factory, source="tests")
    assert reg.plugins() == [
        PluginInfo("echo", "runtime", f"{Echo.__module__}:Echo", Echo),
        PluginInfo("echo-made", "tests", f"{Echo.__module__}:?", factory),
    ]
    assert reg.plugins()[0].version == "3.1" and reg.plugins()[1].version is None
    assert reg.get("echo", bonus=0.5).bonus == 0.5 and reg.get("echo-made", bonus=0.25).bonus == 0.25


def test_unknown_names_list_what_can_be_asked_for(tmp_path):
    with pytest.raises(KeyError) as raised:
        Registry().get("nope")
    assert raised.value.args[0] == "unknown verifier 'nope' (known: none)"
    reg = Registry()
    reg.register("b", Echo)
    reg.register("a", Echo)
    reg.discover_directory(tmp_path / "missing")  # a plugin that failed to load is not offered
    with pytest.raises(KeyError) as raised:
        reg.get("nope")
    assert raised.value.args[0] == "unknown verifier 'nope' (known: a, b)"


def test_built_in_verifiers_are_entry_points_loaded_on_first_use():
    reg = Registry()
    reg.discover_entry_points()
    # read the records directly: plugins() would import every built-in (seconds), which is the point
    infos = reg._plugins
    assert {"math", "constraints", "code"} <= set(reg.names())
    info = infos["constraints"]
    assert (info.name, info.source.split("==")[0], info.target, info.factory) == (
        "constraints",
        "m1-pipeline",
        "verifiers.constraints:ConstraintVerifier",
        None,
    )
    assert reg.get("constraints").name == "constraints"
    assert info.version == "1.0.0" and info.load_error is None
    assert infos["code"].factory is None  # a constraints batch never imports the code sandbox


LAZY = """
LOADS = []


class Good:
    name, version = "good", "1"


def __getattr__(name):  # counts every time an entry point asks this module for an attribute
    LOADS.append(name)
    if name == "Broken":
        raise RuntimeError("plugin broke")
    if name == "Working":
        return Good
    raise AttributeError(name)
"""


def test_an_entry_point_is_loaded_once_whether_it_works_or_not(tmp_path, monkeypatch):
    module_name = f"m1_lazy_{uuid.uuid4().hex}"
    (tmp_path / f"{module_name}.py").write_text(LAZY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))

    def plugin(attr: str) -> PluginInfo:
        ep = EntryPoint(attr.lower(), f"{module_name}:{attr}", ENTRY_POINT_GROUP)
        return PluginInfo(attr.lower(), "dist==1", ep.value, entry_point=ep)

    working, broken, nothing = plugin("Working"), plugin("Broken"), PluginInfo("none", "s", "t")
    for _ in range(3):
        for info in (working, broken, nothing):
            info.load()
    module = __import__(module_name)
    assert module.LOADS == ["Working", "Broken"]  # neither a success nor a failure is retried
    assert working.factory is module.Good and working.load_error is None
    assert broken.factory is None and broken.load_error == "RuntimeError: plugin broke"
    assert nothing.factory is None and nothing.load_error is None  # nothing to load is not an error


SHOUTY = """
from verifiers.base import Reward
from verifiers.constraints import ConstraintVerifier  # imported, so not this file's plugin


class HalfDone:
    name = "half"  # a name but no verify method: not a verifier


class Shouty:
    name = "shouty"
    version = "2.0"

    def verify(self, items):
        return [Reward(float(item["response"].isupper())) for item in items]
"""

DECLARED = """
from verifiers.base import Reward


class Hidden:  # VERIFIERS, when present, is the whole list: this class is not found by its name
    name = "hidden"

    def verify(self, items):
        return [Reward(0.5) for _ in items]


def make_half(**options):
    return Hidden()


VERIFIERS = {"half-score": make_half}
"""


def test_a_plugin_directory_lists_its_verifiers_and_its_broken_files(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    shouty, declared, broken = plugins / "shouty.py", plugins / "declared.py", plugins / "broken.py"
    shouty.write_text(SHOUTY, encoding="utf-8")
    declared.write_text(DECLARED, encoding="utf-8")
    broken.write_text("import does_not_exist_m1\n", encoding="utf-8")
    (plugins / "notes.txt").write_text("not python", encoding="utf-8")

    reg = Registry()
    reg.discover_directory(plugins)
    error = "ModuleNotFoundError: No module named 'does_not_exist_m1'"
    assert [(p.name, p.source, p.target, p.load_error) for p in reg.plugins()] == [
        ("broken", str(broken), str(broken), error),
        ("half-score", str(declared), f"{declared}:make_half", None),
        ("shouty", str(shouty), f"{shouty}:Shouty", None),
    ]
    assert reg.names() == ["half-score", "shouty"]
    assert [r.reward for r in reg.get("half-score").verify([{}])] == [0.5]
    assert [r.reward for r in reg.get("shouty").verify([{"response": "HI"}, {"response": "hi"}])] == [
        1.0,
        0.0,
    ]
    with pytest.raises(KeyError) as raised:
        reg.get("broken")
    assert raised.value.args[0] == f"verifier 'broken' failed to load: {error}"


def test_a_missing_plugin_directory_is_reported_under_its_path(tmp_path):
    missing = tmp_path / "nowhere"
    reg = Registry()
    reg.discover_directory(missing)
    assert reg.plugins() == [
        PluginInfo("nowhere", str(missing), str(missing), load_error="plugin directory not found")
    ]
    assert reg.names() == []
    with pytest.raises(KeyError) as raised:
        reg.get(str(missing))
    assert raised.value.args[0] == f"verifier {str(missing)!r} failed to load: plugin directory not found"


PLUGIN = """
from verifiers.base import Reward


class Plugin:
    name = "{name}"

    def verify(self, items):  # {name}
        return [Reward(1.0) for _ in items]
"""


def test_same_named_files_of_two_directories_stay_apart(tmp_path):
    # each file is its own module in sys.modules, so tools that look a class's module up by name
    # (inspect, typing, pickle) find the file that defined it, not the last file with that name
    reg = Registry()
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "plugin.py").write_text(PLUGIN.format(name=name), encoding="utf-8")
        reg.discover_directory(tmp_path / name)
    for name in ("first", "second"):
        factory = reg.plugins()[reg.names().index(name)].factory
        assert factory.name == name and f"# {name}" in inspect.getsource(factory)
