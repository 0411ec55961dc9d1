"""The reward contract: one Verifier protocol, one Reward record, one registry of plugins.

A verifier scores a batch of items (dicts with at least `response`, plus whatever the verifier needs:
`reference` for math, `tests` for code, the generated puzzle for logic) and returns one Reward per item.
Plugins are found through the entry-point group ``m1.verifiers`` (built-ins register the same way, in
this project's pyproject.toml) and through Python files in directories named in the config.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

ENTRY_POINT_GROUP = "m1.verifiers"


@dataclass
class Reward:
    """A scalar reward plus why: parsed answers, per-test verdicts, or an `error` when the item failed."""

    reward: float
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def error(cls, message: str, **details: Any) -> Reward:
        return cls(0.0, {"error": message, **details})


class ItemError(ValueError):
    """An item a verifier cannot judge (a missing or malformed field): reward 0 with this message."""


def item_field(item: Mapping[str, Any], key: str, decode: bool = True) -> Any:
    """``item[key]``, else the key inside the item's ``metadata`` (the canonical schema keeps extras
    there as a JSON string); with `decode`, a value that is itself a JSON string is decoded (off for
    plain strings such as names). None when absent."""
    value = item.get(key)
    if value is None and item.get("metadata") is not None:
        meta = item["metadata"]
        try:
            meta = json.loads(meta) if isinstance(meta, str) else meta
        except json.JSONDecodeError:
            raise ItemError("`metadata` is not valid JSON") from None
        value = meta.get(key) if isinstance(meta, Mapping) else None
    if decode and isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ItemError(f"`{key}` is a string but not valid JSON") from None
    return value


@runtime_checkable
class Verifier(Protocol):
    name: str
    version: str

    def verify(self, items: Sequence[Mapping[str, Any]]) -> list[Reward]:
        """Score a batch; must return exactly one Reward per item, in order."""
        ...


def verify_safely(verifier: Verifier, items: Sequence[Mapping[str, Any]]) -> list[Reward]:
    """Run a verifier on a batch so that no item can abort it: a failing batch is retried item by
    item, an item that still raises gets reward 0 with an `error` detail, and a reward that is not a
    finite number (a plugin bug that would poison a training batch) is replaced the same way."""
    try:
        rewards = verifier.verify(items)
        if len(rewards) != len(items):
            raise RuntimeError(
                f"verifier {verifier.name} returned {len(rewards)} rewards for {len(items)} items"
            )
    except Exception:  # noqa: BLE001 - isolate the bad item below
        if len(items) == 1:
            return [_one_safely(verifier, items[0])]
        return [_one_safely(verifier, item) for item in items]
    return [_checked(r) for r in rewards]


def _one_safely(verifier: Verifier, item: Mapping[str, Any]) -> Reward:
    try:
        (reward,) = verifier.verify([item])
    except Exception as exc:  # noqa: BLE001 - a plugin's bug must not crash the batch
        return Reward.error(f"{type(exc).__name__}: {exc}")
    return _checked(reward)


def _checked(reward: object) -> Reward:
    if not isinstance(reward, Reward):
        return Reward.error(f"verifier returned {type(reward).__name__}, not a Reward")
    if not isinstance(reward.reward, int | float) or not math.isfinite(reward.reward):
        return Reward.error(f"verifier returned a non-finite or non-numeric reward: {reward.reward!r}")
    if not isinstance(reward.details, dict):
        return Reward.error("verifier returned details that are not a dict")
    return Reward(float(reward.reward), reward.details)


@dataclass
class PluginInfo:
    name: str
    source: str  # the distribution (``name==version``) or the file that provides it
    target: str  # module:attr
    factory: Callable[..., Verifier] | None = None
    load_error: str | None = None
    entry_point: EntryPoint | None = None  # loaded on first use

    @property
    def version(self) -> str | None:
        version = getattr(self.factory, "version", None)
        return version if isinstance(version, str) else None

    def load(self) -> None:
        if self.factory is not None or self.load_error is not None or self.entry_point is None:
            return
        try:
            self.factory = self.entry_point.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin is reported, never fatal
            self.load_error = f"{type(exc).__name__}: {exc}"


class Registry:
    """Verifier plugins by name. Entry points load lazily (a batch of math items never imports the code
    sandbox); a plugin that fails to import is listed with its error instead of breaking the others.
    A plugin directory is read after the entry points, so a local file can override an installed name."""

    def __init__(self) -> None:
        self._plugins: dict[str, PluginInfo] = {}

    def register(self, name: str, factory: Callable[..., Verifier], *, source: str = "runtime") -> None:
        target = f"{getattr(factory, '__module__', '?')}:{getattr(factory, '__qualname__', '?')}"
        self._plugins[name] = PluginInfo(name, source, target, factory)

    def discover_entry_points(self) -> None:
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            dist = f"{ep.dist.name}=={ep.dist.version}" if ep.dist is not None else "?"
            self._plugins.setdefault(ep.name, PluginInfo(ep.name, dist, ep.value, entry_point=ep))

    def discover_directory(self, directory: str | Path) -> None:
        """Load every ``*.py`` file in a directory; each may define ``VERIFIERS = {name: factory}``
        or classes with a ``name`` attribute that satisfy the Verifier protocol."""
        directory = Path(directory)
        if not directory.is_dir():
            self._plugins[str(directory)] = PluginInfo(
                directory.name, str(directory), str(directory), load_error="plugin directory not found"
            )
            return
        for path in sorted(directory.glob("*.py")):
            # the path's hash keeps same-named files of two plugin directories apart in sys.modules
            mod_name = f"m1_plugin_{hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:8]}_{path.stem}"
            try:
                spec = importlib.util.spec_from_file_location(mod_name, path)
                assert spec and spec.loader
                module = importlib.util.module_from_spec(spec)
                sys.modules[mod_name] = module
                spec.loader.exec_module(module)
            except Exception as exc:  # noqa: BLE001
                self._plugins[path.stem] = PluginInfo(
                    path.stem, str(path), str(path), load_error=f"{type(exc).__name__}: {exc}"
                )
                continue
            for name, factory in _plugins_in_module(module):
                self._plugins[name] = PluginInfo(name, str(path), f"{path}:{factory.__name__}", factory)

    def get(self, name: str, **options: Any) -> Verifier:
        info = self._plugins.get(name)
        if info is None:
            known = ", ".join(self.names()) or "none"
            raise KeyError(f"unknown verifier {name!r} (known: {known})")
        info.load()
        if info.factory is None:
            raise KeyError(f"verifier {name!r} failed to load: {info.load_error}")
        return info.factory(**options)

    def plugins(self) -> list[PluginInfo]:
        """Every plugin, loaded, so that versions and load errors are known."""
        for info in self._plugins.values():
            info.load()
        return [self._plugins[n] for n in sorted(self._plugins)]

    def names(self) -> list[str]:
        """Names that can be asked for (load errors surface on `get`)."""
        return sorted(n for n, p in self._plugins.items() if p.load_error is None)


def _plugins_in_module(module) -> Iterable[tuple[str, Callable[..., Verifier]]]:
    declared = getattr(module, "VERIFIERS", None)
    if isinstance(declared, dict):
        yield from declared.items()
        return
    for obj in vars(module).values():
        if (
            isinstance(obj, type)
            and obj.__module__ == module.__name__
            and isinstance(getattr(obj, "name", None), str)
            and callable(getattr(obj, "verify", None))
        ):
            yield obj.name, obj


def default_registry(plugin_dirs: Sequence[str | Path] = ()) -> Registry:
    """Entry points (built-ins and installed plugin packages) plus any plugin directories."""
    reg = Registry()
    reg.discover_entry_points()
    for d in plugin_dirs:
        reg.discover_directory(d)
    return reg
