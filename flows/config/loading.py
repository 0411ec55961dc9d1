"""Reading a config: a TOML, YAML or JSON file (`load_config`), and ``--set a.b=value`` overrides
(`apply_overrides`); every error is one line naming the file or the override to blame."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from flows.config.pipeline import PipelineConfig
from flows.errors import ConfigError


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise ConfigError(f"{path}: config file not found")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(text)
        elif path.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text) or {}
        elif path.suffix == ".json":
            data = json.loads(text)
        else:
            raise ConfigError(f"{path}: unknown config format {path.suffix!r} (use .toml, .yaml or .json)")
    except (tomllib.TOMLDecodeError, yaml.YAMLError, json.JSONDecodeError) as exc:
        first = str(exc).splitlines()[0]
        raise ConfigError(f"{path}: malformed {path.suffix[1:]}: {first}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a table of settings at the top level")
    return data


def _validation_message(exc: ValidationError) -> str:
    e = exc.errors()[0]
    where = ".".join(str(p) for p in e["loc"]) or "config"
    more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {e['msg']}{more}"


def _blame(exc: ValidationError, overrides: list[str]) -> str | None:
    """``override 'train.rl_lrr=1'`` when the first error lies under a key an override set (the last
    one, as it wins), else None: the error is the file's."""
    loc = tuple(str(p) for p in exc.errors()[0]["loc"])
    for item in reversed(overrides):
        key = tuple(item.split("=", 1)[0].strip().split("."))
        if loc[: len(key)] == key or key[: len(loc)] == loc:
            return f"override {item!r}"
    return None


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> PipelineConfig:
    data = _read(Path(path)) if path else {}
    for item in overrides or []:
        _set_dotted(data, item)
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as exc:
        where = _blame(exc, overrides or []) or path or "config"
        raise ConfigError(f"{where}: {_validation_message(exc)}") from None


def apply_overrides(config: PipelineConfig, overrides: list[str]) -> PipelineConfig:
    data = config.model_dump()
    for item in overrides:
        _set_dotted(data, item)
    try:
        return PipelineConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{_blame(exc, overrides) or 'override'}: {_validation_message(exc)}") from None


def _set_dotted(data: dict[str, Any], item: str) -> None:
    """Apply ``a.b.c=value``; the value is parsed as YAML so numbers, booleans and lists work."""
    if "=" not in item:
        raise ConfigError(f"override {item!r}: expected key=value, e.g. train.rl_lr=1e-3")
    key, raw = item.split("=", 1)
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        value = raw
    node = data
    parts = key.strip().split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"override {item!r}: {part} is not a section")
    node[parts[-1]] = value
