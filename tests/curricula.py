"""The default curriculum (flows/curriculum/tiny.toml) cut to a few RL steps per stage, for the tests that
run the whole DAG or the user's path across commands: they check how the stages compose, run and report,
not how far 60 steps train (the learning itself is measured in tests/rl/test_learning_ladder.py and
flows/experiments). Written from tiny.toml itself, so a change to the default's stages reaches these tests."""

from __future__ import annotations

import hashlib
import re
import tempfile
from pathlib import Path

import flows.curriculum

STEPS = 4  # the general stage's own count: its length-bias monitor fits a 4-step window


def short_tiny(steps: int = STEPS) -> str:
    """Path of tiny.toml with every stage's `steps` set to `steps` (same stages, mixtures and windows)."""
    text = (Path(flows.curriculum.__file__).parent / "tiny.toml").read_text(encoding="utf-8")
    short, n = re.subn(r"(?m)^steps = \d+$", f"steps = {steps}", text)
    assert n >= 3, "tiny.toml's stages no longer say `steps = N`"
    digest = hashlib.sha256(short.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / "m1-tests" / f"tiny-{steps}-steps-{digest}.toml"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{digest}.tmp")
        tmp.write_text(short, encoding="utf-8")
        tmp.replace(path)  # atomic: parallel test sessions may write it at once
    return str(path)
